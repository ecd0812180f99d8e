# sandboxd's warm start for Ruby (see the language package's Warm): the
# warm process is `ruby warm.rb`. With the interpreter and RubyGems up, it
# says it is ready, waits for the run, makes the process the run's (argv,
# environment, directory) and runs the program's file at the top level, as
# `ruby main.rb` would: __FILE__, $0, ARGV, DATA, BEGIN, require_relative,
# a top-level return, exit codes and at_exit are the interpreter's own; an
# uncaught exception or a syntax error prints as a fresh start prints it.
def __sandboxd_warm
  IO.for_fd(4).then { |ready| ready.write("ready\n"); ready.close }
  fields = IO.for_fd(3, binmode: true).then { |run| run.read.tap { run.close } }.split("\0", -1)
  argc = Integer(fields[0])
  argv = fields[1, argc]
  envc = Integer(fields[1 + argc])
  env = fields[2 + argc, envc].to_h { |kv| kv.split("=", 2) }
  Dir.chdir(fields[2 + argc + envc])
  ENV.replace(env)
  path = argv[1]
  ARGV.replace(argv[2..])
  $0 = path # the process's title too, and frozen as a fresh start's
  begin
    iseq = RubyVM::InstructionSequence.compile_file(path)
  rescue SyntaxError => e
    # Uncaught from the file itself, as a fresh start's is: the
    # interpreter prints it (with syntax_suggest's hints) and exits 1.
    e.set_backtrace([path])
    raise e
  end
  source = File.binread(path)
  if (at = source.index(/^__END__\r?\n/))
    data = File.open(path)
    data.seek(source.index("\n", at) + 1)
    Object.const_set(:DATA, data)
  end
  iseq
end

iseq = __sandboxd_warm
Object.send(:remove_method, :__sandboxd_warm)
begin
  iseq.eval
rescue Exception => e # the program's: printed as at a fresh start's end
  raise if e.is_a?(SystemExit)
  if (bt = e.backtrace) && (ours = bt.index { |l| l.start_with?(__FILE__ + ":") })
    e.set_backtrace(bt[0...ours])
  end
  raise e
end
