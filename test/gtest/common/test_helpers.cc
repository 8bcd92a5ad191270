#include "test_helpers.h"

#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace ucx_test {

int run_test_in_fresh_process(const char *test)
{
    std::string filter = std::string("--gtest_filter=") + test;
    int status         = 0;
    pid_t pid          = fork();

    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if ((devnull < 0) || (dup2(devnull, STDOUT_FILENO) < 0)) {
            _exit(126);
        }
        execl("/proc/self/exe", "gtest", filter.c_str(),
              "--gtest_also_run_disabled_tests", "--gtest_brief=1", (char*)NULL);
        _exit(127);
    }

    if ((pid < 0) || (waitpid(pid, &status, 0) != pid)) {
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace ucx_test
