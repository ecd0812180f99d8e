package main

import (
	"fmt"
	"strings"
	"text/template"
)

// The throughput corpus: for each language, small programs of the kind an
// evaluation harness sends (a function and the tests that check it), each
// printing "ok" when its tests pass. Six tasks (gcd, Fibonacci, a prime
// sieve, palindromes, insertion sort, binary search) are written once per
// language; each program tests its task on inputs of its own, with the
// answers computed here, so no two programs are the same text.

// corpusSize is the programs per language.
const corpusSize = 100

// corpusLanguage is one language's corpus and how its programs run as
// bare processes on the host: file is what the program is saved as, steps
// the shell command that builds and runs it there ($PYTHON3 and $RUSTC
// are Debian's where the host has them, the images' versions: see
// hostTool; $RUST_LIB is that toolchain's libstd, which prefer-dynamic
// links to).
type corpusLanguage struct {
	name, file, steps string
	// image and imageSteps run it under `docker run --rm` (the source on
	// stdin), with the steps of the language plugin's plan.
	image, imageSteps string
	header, footer    string
	tasks             [6]string
}

// params are one program's inputs and expected answers.
type params struct {
	A, B, G     int64 // gcd(A, B) = G
	N, F        int64 // fib(N) = F
	M, C        int64 // C primes below M
	S           string
	Arr         string // 40 numbers, comma separated
	Sum, Len    int64
	Step, K, KV int64 // sorted multiples of Step; KV = Step*K at index K
	Missing     int64
}

func newParams(i int) params {
	p := params{A: int64(12 * (i + 3)), B: int64(18 * (i + 5))}
	p.G = gcd(p.A, p.B)
	p.N = int64(10 + i%40)
	a, b := int64(0), int64(1)
	for range p.N {
		a, b = b, a+b
	}
	p.F = a
	p.M = int64(1000 + 37*i)
	p.C = primesBelow(p.M)
	s := fmt.Sprint(i*7919 + 11)
	p.S = s + reverse(s)
	x := int64(i + 1)
	var nums []string
	for range 40 {
		x = (x*1103515245 + 12345) % 65536
		nums = append(nums, fmt.Sprint(x))
		p.Sum += x
	}
	p.Arr, p.Len = strings.Join(nums, ", "), 40
	p.Step, p.K = int64(i%7+2), int64(i%100)
	p.KV, p.Missing = p.Step*p.K, p.Step*p.K+1
	return p
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func primesBelow(m int64) int64 {
	composite := make([]bool, m)
	n := int64(0)
	for i := int64(2); i < m; i++ {
		if !composite[i] {
			n++
			for j := i * i; j < m; j += i {
				composite[j] = true
			}
		}
	}
	return n
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// programs is the language's corpus.
func (l corpusLanguage) programs() ([]string, error) {
	var out []string
	for t, body := range l.tasks {
		tmpl, err := template.New(l.name).Parse(l.header + body + l.footer)
		if err != nil {
			return nil, fmt.Errorf("%s task %d: %w", l.name, t, err)
		}
		for i := t; i < corpusSize; i += len(l.tasks) {
			var b strings.Builder
			if err := tmpl.Execute(&b, newParams(i)); err != nil {
				return nil, err
			}
			out = append(out, b.String())
		}
	}
	return out, nil
}

var corpus = []corpusLanguage{
	{name: "python", file: "main.py", steps: "$PYTHON3 main.py", image: "python", imageSteps: "python3 main.py",
		header: "import sys\n\ndef check(ok, what):\n    if not ok:\n        print('FAIL', what, file=sys.stderr)\n        sys.exit(1)\n\n",
		footer: "\nprint('ok')\n",
		tasks: [6]string{
			"def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n\ncheck(gcd({{.A}}, {{.B}}) == {{.G}}, 'gcd')\ncheck(gcd({{.A}}, 0) == {{.A}}, 'gcd with 0')\n",
			"def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\ncheck(fib({{.N}}) == {{.F}}, 'fib')\ncheck(fib(1) == 1, 'fib(1)')\n",
			"def primes_below(m):\n    sieve = [True] * m\n    sieve[0:2] = [False, False]\n    for i in range(2, int(m ** 0.5) + 1):\n        if sieve[i]:\n            sieve[i*i::i] = [False] * len(sieve[i*i::i])\n    return sum(sieve)\n\ncheck(primes_below({{.M}}) == {{.C}}, 'primes')\n",
			"def is_palindrome(s):\n    return s == s[::-1]\n\ncheck(is_palindrome('{{.S}}'), 'palindrome')\ncheck(not is_palindrome('{{.S}}x'), 'not a palindrome')\n",
			"def insertion_sort(xs):\n    xs = list(xs)\n    for i in range(1, len(xs)):\n        x, j = xs[i], i - 1\n        while j >= 0 and xs[j] > x:\n            xs[j + 1] = xs[j]\n            j -= 1\n        xs[j + 1] = x\n    return xs\n\nys = insertion_sort([{{.Arr}}])\ncheck(all(ys[i] <= ys[i + 1] for i in range(len(ys) - 1)), 'sorted')\ncheck(sum(ys) == {{.Sum}} and len(ys) == {{.Len}}, 'same numbers')\n",
			"def search(xs, v):\n    lo, hi = 0, len(xs)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if xs[mid] < v:\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo if lo < len(xs) and xs[lo] == v else -1\n\nxs = [{{.Step}} * k for k in range(100)]\ncheck(search(xs, {{.KV}}) == {{.K}}, 'found')\ncheck(search(xs, {{.Missing}}) == -1, 'missing')\n",
		}},
	{name: "node", file: "main.js", steps: "node main.js", image: "node", imageSteps: "node main.js",
		header: "function check(ok, what) {\n  if (!ok) { console.error('FAIL', what); process.exit(1); }\n}\n\n",
		footer: "\nconsole.log('ok');\n",
		tasks: [6]string{
			"function gcd(a, b) {\n  while (b) [a, b] = [b, a % b];\n  return a;\n}\n\ncheck(gcd({{.A}}, {{.B}}) === {{.G}}, 'gcd');\ncheck(gcd({{.A}}, 0) === {{.A}}, 'gcd with 0');\n",
			"function fib(n) {\n  let a = 0, b = 1;\n  for (let i = 0; i < n; i++) [a, b] = [b, a + b];\n  return a;\n}\n\ncheck(fib({{.N}}) === {{.F}}, 'fib');\ncheck(fib(1) === 1, 'fib(1)');\n",
			"function primesBelow(m) {\n  const composite = new Uint8Array(m);\n  let n = 0;\n  for (let i = 2; i < m; i++) {\n    if (composite[i]) continue;\n    n++;\n    for (let j = i * i; j < m; j += i) composite[j] = 1;\n  }\n  return n;\n}\n\ncheck(primesBelow({{.M}}) === {{.C}}, 'primes');\n",
			"const isPalindrome = (s) => s === [...s].reverse().join('');\n\ncheck(isPalindrome('{{.S}}'), 'palindrome');\ncheck(!isPalindrome('{{.S}}x'), 'not a palindrome');\n",
			"function insertionSort(xs) {\n  xs = xs.slice();\n  for (let i = 1; i < xs.length; i++) {\n    const x = xs[i];\n    let j = i - 1;\n    while (j >= 0 && xs[j] > x) { xs[j + 1] = xs[j]; j--; }\n    xs[j + 1] = x;\n  }\n  return xs;\n}\n\nconst ys = insertionSort([{{.Arr}}]);\ncheck(ys.every((y, i) => i === 0 || ys[i - 1] <= y), 'sorted');\ncheck(ys.reduce((s, y) => s + y, 0) === {{.Sum}} && ys.length === {{.Len}}, 'same numbers');\n",
			"function search(xs, v) {\n  let lo = 0, hi = xs.length;\n  while (lo < hi) {\n    const mid = (lo + hi) >> 1;\n    if (xs[mid] < v) lo = mid + 1; else hi = mid;\n  }\n  return lo < xs.length && xs[lo] === v ? lo : -1;\n}\n\nconst xs = Array.from({ length: 100 }, (_, k) => {{.Step}} * k);\ncheck(search(xs, {{.KV}}) === {{.K}}, 'found');\ncheck(search(xs, {{.Missing}}) === -1, 'missing');\n",
		}},
	{name: "cpp", file: "main.cpp", steps: "g++ -O2 -std=c++20 -o prog main.cpp && ./prog",
		image: "c", imageSteps: "g++ -O2 -std=c++20 -I/usr/local/lib/sandboxd/pch -o prog main.cpp && ./prog",
		header: "#include <iostream>\n#include <string>\n#include <vector>\nusing namespace std;\n\nstatic void check(bool ok, const char *what) {\n  if (!ok) { cerr << \"FAIL \" << what << endl; exit(1); }\n}\n\n",
		footer: "  cout << \"ok\" << endl;\n}\n",
		tasks: [6]string{
			"long long gcd(long long a, long long b) {\n  while (b) { long long t = a % b; a = b; b = t; }\n  return a;\n}\n\nint main() {\n  check(gcd({{.A}}, {{.B}}) == {{.G}}, \"gcd\");\n  check(gcd({{.A}}, 0) == {{.A}}, \"gcd with 0\");\n",
			"long long fib(int n) {\n  long long a = 0, b = 1;\n  for (int i = 0; i < n; i++) { long long t = a + b; a = b; b = t; }\n  return a;\n}\n\nint main() {\n  check(fib({{.N}}) == {{.F}}LL, \"fib\");\n  check(fib(1) == 1, \"fib(1)\");\n",
			"int primesBelow(int m) {\n  vector<bool> composite(m);\n  int n = 0;\n  for (long long i = 2; i < m; i++) {\n    if (composite[i]) continue;\n    n++;\n    for (long long j = i * i; j < m; j += i) composite[j] = true;\n  }\n  return n;\n}\n\nint main() {\n  check(primesBelow({{.M}}) == {{.C}}, \"primes\");\n",
			"bool isPalindrome(const string &s) { return string(s.rbegin(), s.rend()) == s; }\n\nint main() {\n  check(isPalindrome(\"{{.S}}\"), \"palindrome\");\n  check(!isPalindrome(\"{{.S}}x\"), \"not a palindrome\");\n",
			"vector<long long> insertionSort(vector<long long> xs) {\n  for (size_t i = 1; i < xs.size(); i++) {\n    long long x = xs[i];\n    size_t j = i;\n    while (j > 0 && xs[j - 1] > x) { xs[j] = xs[j - 1]; j--; }\n    xs[j] = x;\n  }\n  return xs;\n}\n\nint main() {\n  vector<long long> ys = insertionSort({ {{.Arr}} });\n  long long sum = 0;\n  for (size_t i = 0; i < ys.size(); i++) { sum += ys[i]; check(i == 0 || ys[i - 1] <= ys[i], \"sorted\"); }\n  check(sum == {{.Sum}} && ys.size() == {{.Len}}, \"same numbers\");\n",
			"int search(const vector<long long> &xs, long long v) {\n  size_t lo = 0, hi = xs.size();\n  while (lo < hi) {\n    size_t mid = (lo + hi) / 2;\n    if (xs[mid] < v) lo = mid + 1; else hi = mid;\n  }\n  return lo < xs.size() && xs[lo] == v ? (int)lo : -1;\n}\n\nint main() {\n  vector<long long> xs;\n  for (int k = 0; k < 100; k++) xs.push_back({{.Step}}LL * k);\n  check(search(xs, {{.KV}}) == {{.K}}, \"found\");\n  check(search(xs, {{.Missing}}) == -1, \"missing\");\n",
		}},
	{name: "java", file: "Main.java",
		steps: "javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -d out Main.java && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp out Main",
		image: "java", imageSteps: "javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -d out Main.java && java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp out Main",
		header: "public class Main {\n  static void check(boolean ok, String what) {\n    if (!ok) { System.err.println(\"FAIL \" + what); System.exit(1); }\n  }\n\n",
		footer: "    System.out.println(\"ok\");\n  }\n}\n",
		tasks: [6]string{
			"  static long gcd(long a, long b) {\n    while (b != 0) { long t = a % b; a = b; b = t; }\n    return a;\n  }\n\n  public static void main(String[] args) {\n    check(gcd({{.A}}L, {{.B}}L) == {{.G}}L, \"gcd\");\n    check(gcd({{.A}}L, 0) == {{.A}}L, \"gcd with 0\");\n",
			"  static long fib(int n) {\n    long a = 0, b = 1;\n    for (int i = 0; i < n; i++) { long t = a + b; a = b; b = t; }\n    return a;\n  }\n\n  public static void main(String[] args) {\n    check(fib({{.N}}) == {{.F}}L, \"fib\");\n    check(fib(1) == 1, \"fib(1)\");\n",
			"  static int primesBelow(int m) {\n    boolean[] composite = new boolean[m];\n    int n = 0;\n    for (long i = 2; i < m; i++) {\n      if (composite[(int) i]) continue;\n      n++;\n      for (long j = i * i; j < m; j += i) composite[(int) j] = true;\n    }\n    return n;\n  }\n\n  public static void main(String[] args) {\n    check(primesBelow({{.M}}) == {{.C}}, \"primes\");\n",
			"  static boolean isPalindrome(String s) { return new StringBuilder(s).reverse().toString().equals(s); }\n\n  public static void main(String[] args) {\n    check(isPalindrome(\"{{.S}}\"), \"palindrome\");\n    check(!isPalindrome(\"{{.S}}x\"), \"not a palindrome\");\n",
			"  static long[] insertionSort(long[] xs) {\n    xs = xs.clone();\n    for (int i = 1; i < xs.length; i++) {\n      long x = xs[i];\n      int j = i - 1;\n      while (j >= 0 && xs[j] > x) { xs[j + 1] = xs[j]; j--; }\n      xs[j + 1] = x;\n    }\n    return xs;\n  }\n\n  public static void main(String[] args) {\n    long[] ys = insertionSort(new long[] { {{.Arr}} });\n    long sum = 0;\n    for (int i = 0; i < ys.length; i++) { sum += ys[i]; check(i == 0 || ys[i - 1] <= ys[i], \"sorted\"); }\n    check(sum == {{.Sum}}L && ys.length == {{.Len}}, \"same numbers\");\n",
			"  static int search(long[] xs, long v) {\n    int lo = 0, hi = xs.length;\n    while (lo < hi) {\n      int mid = (lo + hi) >>> 1;\n      if (xs[mid] < v) lo = mid + 1; else hi = mid;\n    }\n    return lo < xs.length && xs[lo] == v ? lo : -1;\n  }\n\n  public static void main(String[] args) {\n    long[] xs = new long[100];\n    for (int k = 0; k < 100; k++) xs[k] = {{.Step}}L * k;\n    check(search(xs, {{.KV}}L) == {{.K}}, \"found\");\n    check(search(xs, {{.Missing}}L) == -1, \"missing\");\n",
		}},
	{name: "go", file: "main.go", steps: "go build -o prog main.go && ./prog", image: "go", imageSteps: "go build -o prog main.go && ./prog",
		header: "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc check(ok bool, what string) {\n\tif !ok {\n\t\tfmt.Fprintln(os.Stderr, \"FAIL\", what)\n\t\tos.Exit(1)\n\t}\n}\n\n",
		footer: "\tfmt.Println(\"ok\")\n}\n",
		tasks: [6]string{
			"func gcd(a, b int64) int64 {\n\tfor b != 0 {\n\t\ta, b = b, a%b\n\t}\n\treturn a\n}\n\nfunc main() {\n\tcheck(gcd({{.A}}, {{.B}}) == {{.G}}, \"gcd\")\n\tcheck(gcd({{.A}}, 0) == {{.A}}, \"gcd with 0\")\n",
			"func fib(n int) int64 {\n\ta, b := int64(0), int64(1)\n\tfor i := 0; i < n; i++ {\n\t\ta, b = b, a+b\n\t}\n\treturn a\n}\n\nfunc main() {\n\tcheck(fib({{.N}}) == {{.F}}, \"fib\")\n\tcheck(fib(1) == 1, \"fib(1)\")\n",
			"func primesBelow(m int) int {\n\tcomposite := make([]bool, m)\n\tn := 0\n\tfor i := 2; i < m; i++ {\n\t\tif composite[i] {\n\t\t\tcontinue\n\t\t}\n\t\tn++\n\t\tfor j := i * i; j < m; j += i {\n\t\t\tcomposite[j] = true\n\t\t}\n\t}\n\treturn n\n}\n\nfunc main() {\n\tcheck(primesBelow({{.M}}) == {{.C}}, \"primes\")\n",
			"func isPalindrome(s string) bool {\n\tfor i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {\n\t\tif s[i] != s[j] {\n\t\t\treturn false\n\t\t}\n\t}\n\treturn true\n}\n\nfunc main() {\n\tcheck(isPalindrome(\"{{.S}}\"), \"palindrome\")\n\tcheck(!isPalindrome(\"{{.S}}x\"), \"not a palindrome\")\n",
			"func insertionSort(xs []int64) []int64 {\n\txs = append([]int64(nil), xs...)\n\tfor i := 1; i < len(xs); i++ {\n\t\tx, j := xs[i], i-1\n\t\tfor j >= 0 && xs[j] > x {\n\t\t\txs[j+1] = xs[j]\n\t\t\tj--\n\t\t}\n\t\txs[j+1] = x\n\t}\n\treturn xs\n}\n\nfunc main() {\n\tys := insertionSort([]int64{ {{.Arr}} })\n\tsum := int64(0)\n\tfor i, y := range ys {\n\t\tsum += y\n\t\tcheck(i == 0 || ys[i-1] <= y, \"sorted\")\n\t}\n\tcheck(sum == {{.Sum}} && len(ys) == {{.Len}}, \"same numbers\")\n",
			"func search(xs []int64, v int64) int {\n\tlo, hi := 0, len(xs)\n\tfor lo < hi {\n\t\tmid := (lo + hi) / 2\n\t\tif xs[mid] < v {\n\t\t\tlo = mid + 1\n\t\t} else {\n\t\t\thi = mid\n\t\t}\n\t}\n\tif lo < len(xs) && xs[lo] == v {\n\t\treturn lo\n\t}\n\treturn -1\n}\n\nfunc main() {\n\tvar xs []int64\n\tfor k := int64(0); k < 100; k++ {\n\t\txs = append(xs, {{.Step}}*k)\n\t}\n\tcheck(search(xs, {{.KV}}) == {{.K}}, \"found\")\n\tcheck(search(xs, {{.Missing}}) == -1, \"missing\")\n",
		}},
	{name: "rust", file: "main.rs", steps: "$RUSTC --edition 2021 -C prefer-dynamic -o prog main.rs && LD_LIBRARY_PATH=$RUST_LIB ./prog", image: "rust", imageSteps: "rustc --edition 2021 -C prefer-dynamic -o prog main.rs && ./prog",
		header: "fn check(ok: bool, what: &str) {\n    if !ok {\n        eprintln!(\"FAIL {}\", what);\n        std::process::exit(1);\n    }\n}\n\n",
		footer: "    println!(\"ok\");\n}\n",
		tasks: [6]string{
			"fn gcd(mut a: i64, mut b: i64) -> i64 {\n    while b != 0 {\n        let t = a % b;\n        a = b;\n        b = t;\n    }\n    a\n}\n\nfn main() {\n    check(gcd({{.A}}, {{.B}}) == {{.G}}, \"gcd\");\n    check(gcd({{.A}}, 0) == {{.A}}, \"gcd with 0\");\n",
			"fn fib(n: u32) -> i64 {\n    let (mut a, mut b) = (0i64, 1i64);\n    for _ in 0..n {\n        let t = a + b;\n        a = b;\n        b = t;\n    }\n    a\n}\n\nfn main() {\n    check(fib({{.N}}) == {{.F}}, \"fib\");\n    check(fib(1) == 1, \"fib(1)\");\n",
			"fn primes_below(m: usize) -> usize {\n    let mut composite = vec![false; m];\n    let mut n = 0;\n    for i in 2..m {\n        if composite[i] {\n            continue;\n        }\n        n += 1;\n        let mut j = i * i;\n        while j < m {\n            composite[j] = true;\n            j += i;\n        }\n    }\n    n\n}\n\nfn main() {\n    check(primes_below({{.M}}) == {{.C}}, \"primes\");\n",
			"fn is_palindrome(s: &str) -> bool {\n    s.chars().rev().collect::<String>() == s\n}\n\nfn main() {\n    check(is_palindrome(\"{{.S}}\"), \"palindrome\");\n    check(!is_palindrome(\"{{.S}}x\"), \"not a palindrome\");\n",
			"fn insertion_sort(xs: &[i64]) -> Vec<i64> {\n    let mut xs = xs.to_vec();\n    for i in 1..xs.len() {\n        let x = xs[i];\n        let mut j = i;\n        while j > 0 && xs[j - 1] > x {\n            xs[j] = xs[j - 1];\n            j -= 1;\n        }\n        xs[j] = x;\n    }\n    xs\n}\n\nfn main() {\n    let ys = insertion_sort(&[{{.Arr}}]);\n    check(ys.windows(2).all(|w| w[0] <= w[1]), \"sorted\");\n    check(ys.iter().sum::<i64>() == {{.Sum}} && ys.len() == {{.Len}}, \"same numbers\");\n",
			"fn search(xs: &[i64], v: i64) -> i64 {\n    let (mut lo, mut hi) = (0, xs.len());\n    while lo < hi {\n        let mid = (lo + hi) / 2;\n        if xs[mid] < v {\n            lo = mid + 1;\n        } else {\n            hi = mid;\n        }\n    }\n    if lo < xs.len() && xs[lo] == v { lo as i64 } else { -1 }\n}\n\nfn main() {\n    let xs: Vec<i64> = (0..100).map(|k| {{.Step}} * k).collect();\n    check(search(&xs, {{.KV}}) == {{.K}}, \"found\");\n    check(search(&xs, {{.Missing}}) == -1, \"missing\");\n",
		}},
}
