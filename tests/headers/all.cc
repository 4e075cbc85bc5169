// SPDX-License-Identifier: BSD-3-Clause
// Every public header compiles as C++ (scripts/check.sh: g++ and clang++, -Werror).
#include <hotpath/hotpath.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

int main()
{
    struct hp_buf b = {};
    return hp_buf_refcnt(&b) + (hp_strerror(0) == nullptr);
}
