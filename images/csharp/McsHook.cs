// sandboxd's warm start for mcs (see the language package's Warm): a Mono
// started ahead, with the compiler loaded and run twice so that its code
// is compiled, stands in for `sh -c 'exec "$@" >&2' sh mcs ARGS`. Once the
// run comes it compiles ARGS in this process as mcs's own Main would, its
// diagnostics and summary going to stderr as the shell sends them, and
// exits with mcs's exit code. The supervisor hands it only runs in the
// directory it started in.
using System;
using System.IO;
using System.Reflection;
using System.Text;
using Mono.CSharp;

class McsHook {
  // The fields before mcs's own arguments: sh -c 'exec "$@" >&2' sh mcs.
  const int Wrapper = 5;

  static int Main() {
    var dir = Path.Combine(Path.GetTempPath(), ".sandboxd/warm/mcs");
    Directory.CreateDirectory(dir);
    var source = Path.Combine(dir, "Warm.cs");
    File.WriteAllText(source, "using System; using System.Linq;\nclass Warm { static void Main(string[] a) { Console.WriteLine(a.Select(x => x.Length).Sum()); } }\n");
    for (int i = 0; i < 2; i++) {
      CompilerCallableEntryPoint.InvokeCompiler(new[] { "-optimize+", "-out:" + Path.Combine(dir, "warm.exe"), source }, TextWriter.Null);
    }
    using (var ready = new FileStream("/proc/self/fd/4", FileMode.Open, FileAccess.Write)) {
      var b = Encoding.UTF8.GetBytes("ready\n");
      ready.Write(b, 0, b.Length);
    }
    string data;
    using (var go = new FileStream("/proc/self/fd/3", FileMode.Open, FileAccess.Read))
    using (var r = new StreamReader(go, new UTF8Encoding(false))) {
      data = r.ReadToEnd();
    }
    var fields = data.Split('\0');
    int argc = int.Parse(fields[0]);
    var args = new string[argc - Wrapper];
    Array.Copy(fields, 1 + Wrapper, args, 0, args.Length);
    // mcs's own Main (internal): its summary line goes to stdout, which
    // the shell would have sent to stderr.
    Console.SetOut(Console.Error);
    var main = typeof(CompilerCallableEntryPoint).Assembly.GetType("Mono.CSharp.Driver")
      .GetMethod("Main", BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic);
    int code = (int)main.Invoke(null, new object[] { args });
    Console.Error.Flush();
    return code;
  }
}
