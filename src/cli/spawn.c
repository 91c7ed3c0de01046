/* spawn: start and stop child node processes (see spawn.h). */
#include "cli/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

const char *pk_self_exe(void)
{
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

    if (n <= 0)
        return "partkv";
    path[n] = '\0';
    return path;
}

/* Reads the child's stdout until the ready line -- and the TLS line after
 * it when tls -- or the deadline. */
static int wait_ready(pk_child *c, int tls, long deadline)
{
    char buf[512];
    size_t len = 0;

    while (now_ms() < deadline) {
        struct pollfd p = {c->out_fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(deadline - now_ms()));
        ssize_t n;
        char *nl;
        if (r <= 0)
            continue;
        n = read(c->out_fd, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        nl = strchr(buf, '\n');
        if (nl == NULL)
            continue;
        if (sscanf(buf, "partkv: ready on %63[^:]:%d", c->host, &c->port) != 2)
            return -1;
        if (!tls)
            return 0;
        /* The cluster speaks on the TLS port. */
        if (strchr(nl + 1, '\n') != NULL)
            return sscanf(nl + 1, "partkv: tls on %*[^:]:%d", &c->port) == 1
                       ? 0
                       : -1;
    }
    return -1;
}

int pk_child_start(pk_child *c, char *const argv[], int timeout_ms)
{
    int fds[2], tls = 0;

    memset(c, 0, sizeof(*c));
    c->out_fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "partkv: pipe: %s\n", strerror(errno));
        return -1;
    }
    c->pid = fork();
    if (c->pid < 0) {
        fprintf(stderr, "partkv: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        c->pid = 0;
        return -1;
    }
    if (c->pid == 0) {
        sigset_t none;
        /* The parent blocks SIGINT/SIGTERM to take them with sigwait; a
         * node must get them. */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* A node must not outlive its `cluster up`, even a SIGKILLed one. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            _exit(1);
        dup2(fds[1], STDOUT_FILENO);
        execv(argv[0], argv);
        fprintf(stderr, "partkv: cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    c->out_fd = fds[0];
    for (int i = 0; argv[i]; i++)
        tls |= strcmp(argv[i], "--tls-port") == 0;
    if (wait_ready(c, tls, now_ms() + timeout_ms) != 0) {
        fprintf(stderr, "partkv: node %s did not become ready\n",
                argv[2] ? argv[2] : "?");
        pk_child_stop(c, 1000);
        return -1;
    }
    return 0;
}

int pk_child_stop(pk_child *c, int grace_ms)
{
    int status = 0;
    long deadline = now_ms() + grace_ms;

    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        while (waitpid(c->pid, &status, WNOHANG) == 0) {
            if (now_ms() >= deadline) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, &status, 0);
                break;
            }
            usleep(10000);
        }
        c->pid = 0;
    }
    if (c->out_fd >= 0) {
        close(c->out_fd);
        c->out_fd = -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
