// sandboxd's warm start for javac (see the language package's Warm): a JVM
// started ahead, with the compiler loaded and run twice so that its code is
// compiled, stands in for `javac -J... ARGS`. Once the run comes it
// compiles ARGS in this JVM, its diagnostics going to stderr as javac's
// do, and exits with javac's exit code. The JVM cannot change directory:
// the supervisor hands it only runs in the directory it started in.
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public class JavacHook {
  public static void main(String[] ignored) throws Exception {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    File dir = new File(System.getProperty("java.io.tmpdir"), ".sandboxd/warm/javac");
    dir.mkdirs();
    File source = new File(dir, "Warm.java");
    Files.writeString(source.toPath(),
        "import java.util.*;\npublic class Warm { public static void main(String[] a) { System.out.println(List.of(a.length)); } }\n");
    OutputStream quiet = OutputStream.nullOutputStream();
    for (int i = 0; i < 2; i++) {
      javac.run(null, quiet, quiet, "-encoding", "UTF-8", "-d", dir.getPath(), source.getPath());
    }
    try (FileOutputStream ready = new FileOutputStream("/proc/self/fd/4")) {
      ready.write("ready\n".getBytes(StandardCharsets.UTF_8));
    }
    // Read by hand: JDK 17's readAllBytes seeks, which a pipe refuses.
    ByteArrayOutputStream data = new ByteArrayOutputStream();
    try (FileInputStream go = new FileInputStream("/proc/self/fd/3")) {
      byte[] buf = new byte[1 << 16];
      for (int n; (n = go.read(buf)) > 0; ) {
        data.write(buf, 0, n);
      }
    }
    String[] fields = data.toString(StandardCharsets.UTF_8).split("\0", -1);
    int argc = Integer.parseInt(fields[0]);
    List<String> args = new ArrayList<>();
    for (int i = 2; i <= argc; i++) { // argv[0] is javac; -J options were this JVM's
      if (!fields[i].startsWith("-J")) {
        args.add(fields[i]);
      }
    }
    int code = javac.run(null, System.out, System.err, args.toArray(new String[0]));
    System.out.flush();
    System.err.flush();
    System.exit(code);
  }
}
