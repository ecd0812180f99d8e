/* The pod sandbox's process for `make cluster`: it holds the pod's
 * namespaces and reaps what is reparented to it, like Kubernetes' own
 * pause (build/pause/linux/pause.c), of which this is a reduction. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { _exit(0); }

static void reap(int sig) {
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  if (getpid() != 1) {
    return 1; /* only meaningful as a namespace's init */
  }
  struct sigaction term = {.sa_handler = stop}, chld = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &term, NULL);
  sigaction(SIGTERM, &term, NULL);
  sigaction(SIGCHLD, &chld, NULL);
  for (;;) {
    pause();
  }
}
