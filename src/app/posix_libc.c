/* SPDX-License-Identifier: BSD-3-Clause */
/* The C library's own socket, I/O and polling functions, found with dlsym(RTLD_NEXT) behind the layer's. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "posix_internal.h"

struct hp__px_libc hp__px_real;
__thread int hp__px_in_layer __attribute__((tls_model("initial-exec")));

/* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define PX_RESOLVE(name) hp__px_real_set((void **)&tmp.name, #name)

static void hp__px_real_set(void **slot, const char *name)
{
    *slot = dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
    struct hp__px_libc tmp = {0};
    PX_RESOLVE(socket), PX_RESOLVE(bind), PX_RESOLVE(listen), PX_RESOLVE(accept);
    PX_RESOLVE(accept4), PX_RESOLVE(connect), PX_RESOLVE(close), PX_RESOLVE(shutdown);
    PX_RESOLVE(read), PX_RESOLVE(write), PX_RESOLVE(readv), PX_RESOLVE(writev);
    PX_RESOLVE(recv), PX_RESOLVE(recvfrom), PX_RESOLVE(recvmsg), PX_RESOLVE(recvmmsg);
    PX_RESOLVE(send), PX_RESOLVE(sendto), PX_RESOLVE(sendmsg), PX_RESOLVE(sendmmsg);
    PX_RESOLVE(sendfile), PX_RESOLVE(getsockname), PX_RESOLVE(getpeername);
    PX_RESOLVE(setsockopt), PX_RESOLVE(getsockopt), PX_RESOLVE(fcntl), PX_RESOLVE(ioctl);
    PX_RESOLVE(dup), PX_RESOLVE(dup2), PX_RESOLVE(dup3);
    PX_RESOLVE(epoll_create), PX_RESOLVE(epoll_create1), PX_RESOLVE(epoll_ctl);
    PX_RESOLVE(epoll_wait), PX_RESOLVE(epoll_pwait), PX_RESOLVE(epoll_pwait2);
    PX_RESOLVE(poll), PX_RESOLVE(ppoll), PX_RESOLVE(select), PX_RESOLVE(pselect);
    PX_RESOLVE(close_range), PX_RESOLVE(closefrom), PX_RESOLVE(sigaction);
    /* The mandatory ones: without them nothing can work (a static binary,
     * or a C library without these names); say so once and stop. */
    if (!tmp.socket || !tmp.close || !tmp.read || !tmp.write || !tmp.fcntl || !tmp.ppoll ||
        !tmp.epoll_create1 || !tmp.epoll_ctl || !tmp.epoll_pwait || !tmp.dup3 || !tmp.sigaction) {
        static const char msg[] =
            "hotpath: libhotpath-posix.so cannot find the C library's socket calls "
            "(dlsym RTLD_NEXT failed): is the program static?\n";
        ssize_t r = syscall(SYS_write, 2, msg, sizeof msg - 1);
        (void)r;
        abort();
    }
    hp__px_real = tmp;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

void hp__px_libc_init(void)
{
    pthread_once(&once, resolve);
}
