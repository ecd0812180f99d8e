// sandboxd's context kernel for Java (plugins/lang/java): one JShell,
// running its snippets in its own JVM, that evaluates each cell it is sent
// so that what a cell declares persists, and shows the value of a cell
// that ends in an expression. The protocol is the language plugin
// contract's (plugins/language: ContextCommand), with jq in front (see the
// plugin): each cell is a line of base64 fields on descriptor 3 (code,
// name, mark, then its env as KEY:VALUE pairs, each base64, joined by
// commas, or "-"); output goes to 1 and 2, then the cell's mark on both,
// then a JSON reply line on descriptor 4 ({"name", "status", "exit_code",
// "display"}).
//
// The JVM cannot change its own environment, so a cell's env is set as
// system properties for the cell and taken back after, and the sandbox's
// environment is there as properties too: what E2B's Java kernel does,
// whose clients read them with System.getProperty. A compile error or an
// exception ends the cell (status error, the message on stderr), not the
// context; System.exit ends the context, and so does a JShell that can no
// longer compile (a string literal past the class file's limit leaves it
// so), which the next cell starts afresh.
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.ExpressionSnippet;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;
import jdk.jshell.VarSnippet;

public class JShellKernel {
    // What JShell's own tool imports at its start.
    static final String[] IMPORTS = {"java.io.*", "java.math.*", "java.net.*", "java.nio.file.*", "java.util.*",
        "java.util.concurrent.*", "java.util.function.*", "java.util.prefs.*", "java.util.regex.*", "java.util.stream.*"};

    public static void main(String[] args) throws Exception {
        BufferedReader cells = new BufferedReader(new InputStreamReader(new FileInputStream("/dev/fd/3"), StandardCharsets.UTF_8));
        PrintStream reply = new PrintStream(new FileOutputStream("/dev/fd/4"), true, StandardCharsets.UTF_8);
        OutputStream out = new FileOutputStream(FileDescriptor.out), err = new FileOutputStream(FileDescriptor.err);
        // The streams cells print to; a cell that replaces or closes them
        // has them back for the next.
        PrintStream stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        PrintStream stderr = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        System.setOut(stdout);
        System.setErr(stderr);
        System.getenv().forEach((k, v) -> {
            if (System.getProperty(k) == null) {
                System.setProperty(k, v);
            }
        });
        JShell shell = JShell.builder().executionEngine("local").out(stdout).err(stderr).build();
        for (String pkg : IMPORTS) {
            shell.eval("import " + pkg + ";");
        }
        Base64.Decoder b64 = Base64.getDecoder();
        for (String line; (line = cells.readLine()) != null; ) {
            String[] f = line.split(" ", -1);
            if (f.length != 4) {
                continue;
            }
            String code = new String(b64.decode(f[0]), StandardCharsets.UTF_8);
            String name = new String(b64.decode(f[1]), StandardCharsets.UTF_8);
            byte[] mark = b64.decode(f[2]);
            Map<String, String> env = new LinkedHashMap<>();
            if (!f[3].equals("-")) {
                for (String kv : f[3].split(",")) {
                    String[] p = kv.split(":", 2);
                    env.put(new String(b64.decode(p[0]), StandardCharsets.UTF_8), new String(b64.decode(p[1]), StandardCharsets.UTF_8));
                }
            }
            Map<String, String> before = new LinkedHashMap<>();
            env.forEach((k, v) -> before.put(k, System.setProperty(k, v)));
            String[] shown = {null};
            boolean ok = false;
            try {
                ok = run(shell, code, shown);
            } catch (RuntimeException | Error x) {
                stderr.println("error: " + x);
            } finally {
                System.setOut(stdout);
                System.setErr(stderr);
                before.forEach((k, v) -> {
                    if (v == null) {
                        System.clearProperty(k);
                    } else {
                        System.setProperty(k, v);
                    }
                });
            }
            if (!ok && !compiles(shell)) {
                // Ended within the cell: the cell says the context is lost.
                stderr.println("sandboxd: JShell can no longer compile anything; the Java context ends, and starts afresh on its next use");
                System.exit(1);
            }
            stdout.flush();
            stderr.flush();
            out.write(mark);
            err.write(mark);
            out.flush();
            err.flush();
            String display = shown[0] == null ? "" : "{\"mime\":\"text/plain\",\"data\":" + json(shown[0]) + ",\"main\":true}";
            reply.println("{\"name\":" + json(name) + ",\"status\":\"" + (ok ? "ok" : "error") + "\",\"exit_code\":" + (ok ? 0 : 1)
                + ",\"display\":[" + display + "]}");
        }
    }

    // run evaluates code snippet by snippet, stopping at the first that
    // fails; shown[0] is the value of the last, when it is an expression.
    static boolean run(JShell shell, String code, String[] shown) {
        SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
        List<String> snippets = new ArrayList<>();
        for (String rest = code; !rest.isBlank(); ) {
            SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
            if (info.completeness() == SourceCodeAnalysis.Completeness.EMPTY) {
                break;
            }
            if (!info.completeness().isComplete()) {
                System.err.println("error: the cell ends in the middle of a statement, a block, a string or a comment");
                return false;
            }
            snippets.add(info.source());
            rest = info.remaining();
        }
        for (int i = 0; i < snippets.size(); i++) {
            shown[0] = null;
            for (SnippetEvent e : shell.eval(snippets.get(i))) {
                if (e.causeSnippet() != null) {
                    continue; // another snippet this one changed
                }
                Snippet s = e.snippet();
                if (e.status() != Snippet.Status.VALID && e.status() != Snippet.Status.RECOVERABLE_DEFINED) {
                    List<Diag> diags = shell.diagnostics(s).toList();
                    // "location: class" names JShell's wrapper, which is no class of the cell's.
                    diags.forEach(d -> System.err.println("error: " + d.getMessage(Locale.ROOT).replaceAll("\\n\\s*location: class\\s*$", "")));
                    if (diags.isEmpty()) {
                        System.err.println("error: JShell did not take `" + s.source().strip() + "`" +
                            (e.status() == Snippet.Status.RECOVERABLE_NOT_DEFINED ? ": it needs something not yet declared" : ""));
                    }
                    return false;
                }
                if (e.status() == Snippet.Status.RECOVERABLE_DEFINED) {
                    System.err.println("warning: `" + s.source().strip() + "` is declared, but cannot be used until what it refers to is declared");
                }
                if (e.exception() != null) {
                    report(e.exception());
                    return false;
                }
                String type = null;
                if (s instanceof ExpressionSnippet x) {
                    type = x.typeName();
                } else if (s instanceof VarSnippet v && v.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND) {
                    type = v.typeName();
                }
                if (type != null && e.value() != null) {
                    shown[0] = type.equals("String") ? unquote(e.value()) : e.value();
                }
            }
        }
        return true;
    }

    // compiles says whether the shell still compiles a trivial snippet.
    static boolean compiles(JShell shell) {
        try {
            return shell.eval("0;").stream().allMatch(e -> e.status() == Snippet.Status.VALID);
        } catch (RuntimeException x) {
            return false;
        }
    }

    static void report(Exception x) {
        if (x instanceof EvalException e) {
            System.err.println(e.getExceptionClassName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
            for (StackTraceElement t : e.getStackTrace()) {
                if (t.getClassName().startsWith("REPL.")) {
                    System.err.println("\tat " + t.getMethodName() + " (cell line " + t.getLineNumber() + ")");
                }
            }
        } else if (x instanceof UnresolvedReferenceException u) {
            System.err.println("error: " + u.getSnippet().source().strip() + " refers to something not yet declared");
        } else {
            System.err.println(x);
        }
    }

    // unquote is the text of a String as JShell shows it: a Java literal.
    static String unquote(String literal) {
        if (literal.length() < 2 || !literal.startsWith("\"") || !literal.endsWith("\"")) {
            return literal; // null
        }
        return literal.substring(1, literal.length() - 1).translateEscapes();
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
