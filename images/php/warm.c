/*
 * php-warm.so: sandboxd's warm runtime for php (LD_PRELOAD).
 *
 * php cannot run a second script as its main one, and it fixes $argv when
 * it starts; what it can do is start early. Started as `php main.php` with
 * this library preloaded and SANDBOXD_WARM_SCRIPT=main.php, php loads its
 * extensions and ini files, then opens its script. That open is held here:
 * we say "ready" on fd 4, wait for the run on fd 3 (see sandboxd's
 * language.Warm protocol), take on its environment and directory, and only
 * then open the script, which the run has written by now. Everything after
 * (request startup, $_SERVER, REQUEST_TIME, STDIN) happens as in a fresh
 * start, because it is one from there on.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int held_argc;
static char **held_argv;

/* glibc passes main's arguments to a preloaded library's constructors;
 * they are copied, as php moves them to make room for its process title. */
__attribute__((constructor)) static void remember(int argc, char **argv, char **envp)
{
	(void)envp;
	held_argv = calloc(argc, sizeof *held_argv);
	for (int i = 0; held_argv && i < argc; i++)
		held_argv[i] = strdup(argv[i]);
	held_argc = held_argv ? argc : 0;
}

static void fail(const char *why)
{
	fprintf(stderr, "sandboxd php warm runtime: %s\n", why);
	_exit(127);
}

/* slurp reads fd to its end. */
static char *slurp(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			fail("out of memory");
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0)
			fail("reading the run failed");
		if (r == 0)
			break;
		n += r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	*len = n;
	return buf;
}

/* field returns the NUL-ended field at *at and moves past it. */
static char *field(char *buf, size_t len, size_t *at)
{
	char *f = buf + *at;
	char *end = memchr(f, 0, len - *at);
	if (*at >= len || !end)
		fail("the run's message is cut short");
	*at = end - buf + 1;
	return f;
}

/* take_run waits for the run and makes this process its: the same argv
 * (checked: php's cannot change), its environment, its directory. */
static void take_run(void)
{
	if (write(4, "ready\n", 6) != 6)
		fail("saying ready failed");
	close(4);
	size_t len, at = 0;
	char *msg = slurp(3, &len);
	close(3);
	long argc = strtol(field(msg, len, &at), NULL, 10);
	if (argc != held_argc)
		fail("the run's arguments are not the ones php started with");
	for (long i = 0; i < argc; i++)
		if (strcmp(field(msg, len, &at), held_argv[i]) != 0)
			fail("the run's arguments are not the ones php started with");
	long envc = strtol(field(msg, len, &at), NULL, 10);
	clearenv();
	for (long i = 0; i < envc; i++)
		if (putenv(field(msg, len, &at)) != 0) /* msg is never freed */
			fail("setting the environment failed");
	if (chdir(field(msg, len, &at)) != 0)
		fail("entering the run's directory failed");
}

static int is_held(const char *path)
{
	static int taken;
	const char *script = getenv("SANDBOXD_WARM_SCRIPT");
	if (taken || !script || strcmp(path, script) != 0)
		return 0;
	taken = 1;
	return 1;
}

FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*next)(const char *, const char *);
	if (!next)
		next = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
	if (is_held(path))
		take_run();
	return next(path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	return fopen(path, mode);
}
