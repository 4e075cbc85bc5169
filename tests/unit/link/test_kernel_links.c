/* SPDX-License-Identifier: BSD-3-Clause */
/* The tap and afpacket links' refusals that need no privilege: bad settings, missing interfaces, rights, devices. */
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"

/* Exit codes of the checks run in a child process. */
#define CHILD_PASS 0
#define CHILD_FAIL 1
#define CHILD_SKIP 77

/* Whether the last link error is a sentence mentioning `what`. */
static bool error_names(const char *what)
{
    const char *msg = hp_link_error();
    return msg && *msg && strstr(msg, what) != NULL;
}

/* Open a link expecting failure with errno `err` and a message naming
 * `name`; a link opened by mistake is closed. */
static void expect_refusal(const char *kind, const struct hp_link_config *cfg, int err,
                           const char *name, int line)
{
    errno = 0;
    struct hp_link *l = hp_link_open(kind, cfg);
    if (l) {
        hp_test_fail(__FILE__, line, "hp_link_open(\"%s\") succeeded", kind ? kind : "(null)");
        hp_link_close(l);
        return;
    }
    if (errno != err)
        hp_test_fail(__FILE__, line, "errno %d (%s), expected %d (%s)", errno, strerror(errno), err,
                     strerror(err));
    if (!error_names(name))
        hp_test_fail(__FILE__, line, "the message \"%s\" does not name '%s'", hp_link_error(),
                     name);
}
#define EXPECT_REFUSAL(kind, cfg, err, name) expect_refusal(kind, cfg, err, name, __LINE__)

/*
 * Run fn in a child process, which may drop privileges or change namespaces
 * without affecting the rest of the run. fn returns CHILD_PASS, CHILD_SKIP,
 * or CHILD_FAIL after printing why. An alarm kills a child that hangs.
 * @return fn's return value, or -1 when the child did not exit normally.
 */
static int in_child(int (*fn)(void))
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        alarm(10);
        int rc = fn();
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Become nobody when running as root. false when that fails or when
 * effective capabilities remain (the refusal could not be observed). */
static bool drop_privileges(void)
{
    if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
        return false;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return false;
    char line[256];
    bool none = false;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "CapEff:", 7) == 0)
            none = strtoull(line + 7, NULL, 16) == 0;
    fclose(f);
    return none;
}

/* In a child: open a link expecting EPERM and a message naming `name` and
 * the way out ("run as root"). */
static int child_expect_eperm(const char *kind, const struct hp_link_config *cfg, const char *name)
{
    if (!drop_privileges())
        return CHILD_SKIP;
    errno = 0;
    struct hp_link *l = hp_link_open(kind, cfg);
    if (l) {
        fprintf(stderr, "    %s on %s opened without privilege\n", kind, name);
        hp_link_close(l);
        return CHILD_FAIL;
    }
    int rc = CHILD_PASS;
    if (errno != EPERM) {
        fprintf(stderr, "    errno %d (%s), expected EPERM\n", errno, strerror(errno));
        rc = CHILD_FAIL;
    }
    if (!error_names(name) || !error_names("run as root")) {
        fprintf(stderr, "    the message \"%s\" does not name '%s' and say \"run as root\"\n",
                hp_link_error(), name);
        rc = CHILD_FAIL;
    }
    if (hp_pools_in_use() != 0) {
        fprintf(stderr, "    %ld buffers in use after the refusal\n", hp_pools_in_use());
        rc = CHILD_FAIL;
    }
    return rc;
}

HP_TEST(link_open_refuses_unknown_kinds)
{
    EXPECT_REFUSAL("nosuchkind", NULL, EINVAL, "nosuchkind");
    EXPECT_REFUSAL(NULL, NULL, EINVAL, "tap");
    EXPECT_REFUSAL("mem", NULL, EINVAL, "hp_link_mem_pair");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(link_open_refuses_bad_ring_sizes)
{
    struct hp_link_config cfg = {.iface = "lo", .ring_size = 1000};
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "1000");
    cfg.ring_size = 1;
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "ring_size");
    cfg.ring_size = 3;
    EXPECT_REFUSAL("tap", &cfg, EINVAL, "ring_size");
    /* A power of two, but a ring of gigabytes. */
    cfg.ring_size = 1u << 30;
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "ring_size");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(afpacket_needs_an_interface)
{
    struct hp_link_config cfg = {0};
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "cfg->iface");
    EXPECT_REFUSAL("afpacket", NULL, EINVAL, "cfg->iface");
    cfg.iface = "";
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "cfg->iface");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(afpacket_names_a_missing_interface)
{
    /* ENODEV, or EPERM where the lookup itself is refused: either way the
     * sentence names the interface. */
    struct hp_link_config cfg = {.iface = "hpnosuch0"};
    errno = 0;
    struct hp_link *l = hp_link_open("afpacket", &cfg);
    HP_CHECK(l == NULL);
    hp_link_close(l);
    HP_CHECK(errno == ENODEV || errno == EPERM);
    HP_CHECK(error_names("hpnosuch0"));
    /* Longer than any interface name can be. */
    cfg.iface = "hp-a-name-far-too-long-for-linux";
    EXPECT_REFUSAL("afpacket", &cfg, ENODEV, "hp-a-name-far-too-long-for-linux");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(afpacket_refuses_flags_of_other_backends)
{
    struct hp_link_config cfg = {.iface = "lo", .flags = HP_LINK_F_ZEROCOPY};
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "flags");
    cfg.flags = HP_LINK_F_TAP_ATTACH;
    EXPECT_REFUSAL("afpacket", &cfg, EINVAL, "flags");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tap_refuses_bad_configurations)
{
    struct hp_link_config cfg = {.flags = HP_LINK_F_XDP_SKB};
    EXPECT_REFUSAL("tap", &cfg, EINVAL, "flags");
    cfg.flags = HP_LINK_F_TAP_ATTACH;
    EXPECT_REFUSAL("tap", &cfg, EINVAL, "cfg->iface");
    cfg.flags = 0;
    cfg.iface = "hp-a-name-far-too-long-for-linux";
    EXPECT_REFUSAL("tap", &cfg, EINVAL, "hp-a-name-far-too-long-for-linux");
    cfg.iface = "";
    EXPECT_REFUSAL("tap", &cfg, EINVAL, "''");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tap_attach_names_a_missing_device)
{
    struct hp_link_config cfg = {.iface = "hpnosuch1", .flags = HP_LINK_F_TAP_ATTACH};
    EXPECT_REFUSAL("tap", &cfg, ENODEV, "hpnosuch1");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static int tap_without_privilege(void)
{
    struct hp_link_config cfg = {.iface = "hpnopriv0"};
    return child_expect_eperm("tap", &cfg, "hpnopriv0");
}

HP_TEST(tap_without_privilege_says_run_as_root)
{
    /* As root, the check runs as nobody in a child, so that no device is
     * ever created here. */
    int rc = in_child(tap_without_privilege);
    if (rc == CHILD_SKIP)
        HP_SKIP("cannot run without capabilities here");
    HP_CHECK_EQ(rc, CHILD_PASS);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static int afpacket_without_privilege(void)
{
    /* lo exists in every namespace, so the refusal is about the right. */
    struct hp_link_config cfg = {.iface = "lo"};
    int rc = child_expect_eperm("afpacket", &cfg, "lo");
    if (rc == CHILD_PASS && !error_names("CAP_NET_RAW")) {
        fprintf(stderr, "    the message \"%s\" does not name CAP_NET_RAW\n", hp_link_error());
        rc = CHILD_FAIL;
    }
    return rc;
}

HP_TEST(afpacket_without_privilege_names_cap_net_raw)
{
    int rc = in_child(afpacket_without_privilege);
    if (rc == CHILD_SKIP)
        HP_SKIP("cannot run without capabilities here");
    HP_CHECK_EQ(rc, CHILD_PASS);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* In a private mount namespace (inside a user namespace when not root), hide
 * /dev/net under an empty tmpfs: /dev/net/tun cannot be opened. */
static int tap_without_clone_device(void)
{
    int flags = CLONE_NEWNS | (geteuid() != 0 ? CLONE_NEWUSER : 0);
    if (unshare(flags) < 0)
        return CHILD_SKIP;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return CHILD_SKIP;
    if (mount("hp-empty", "/dev/net", "tmpfs", 0, "size=4k") < 0)
        return CHILD_SKIP;
    struct hp_link_config cfg = {.iface = "hpnotun0"};
    errno = 0;
    struct hp_link *l = hp_link_open("tap", &cfg);
    if (l) {
        fprintf(stderr, "    tap opened without /dev/net/tun\n");
        hp_link_close(l);
        return CHILD_FAIL;
    }
    int rc = CHILD_PASS;
    if (errno != EOPNOTSUPP) {
        fprintf(stderr, "    errno %d (%s), expected EOPNOTSUPP\n", errno, strerror(errno));
        rc = CHILD_FAIL;
    }
    if (!error_names("/dev/net/tun") || !error_names("modprobe tun")) {
        fprintf(stderr, "    the message \"%s\" does not name /dev/net/tun and the fix\n",
                hp_link_error());
        rc = CHILD_FAIL;
    }
    return rc;
}

HP_TEST(tap_without_dev_net_tun_says_why)
{
    int rc = in_child(tap_without_clone_device);
    if (rc == CHILD_SKIP)
        HP_SKIP("cannot make a private mount namespace here");
    HP_CHECK_EQ(rc, CHILD_PASS);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(link_error_is_never_empty)
{
    /* Every refusal above leaves a sentence; so does the first call. */
    HP_CHECK(hp_link_error() != NULL);
    struct hp_link_config cfg = {.iface = "hpnosuch2", .flags = HP_LINK_F_TAP_ATTACH};
    HP_CHECK(hp_link_open("tap", &cfg) == NULL);
    HP_CHECK(strlen(hp_link_error()) > 10);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
