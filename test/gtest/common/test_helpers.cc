#include "test_helpers.h"

#include <ucs/debug/log.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace ucx_test {

config_sandbox::config_sandbox() : m_saved_level(ucs_log_level)
{
    m_log_path = make_file("");
    EXPECT_EQ(UCS_OK, ucs_log_set_file(m_log_path.c_str()));
    ucs_log_set_level(UCS_LOG_LEVEL_WARN);
}

config_sandbox::~config_sandbox()
{
    ucs_log_set_file("stderr");
    ucs_log_set_level((ucs_log_level_t)m_saved_level);
    while (!m_env.empty()) {
        m_env.pop_back(); /* restore in reverse order of setting */
    }
    for (const std::string &path : m_files) {
        unlink(path.c_str());
    }
}

void config_sandbox::setenv(const char *name, const char *value)
{
    m_env.emplace_back(new scoped_setenv(name, value));
}

std::string config_sandbox::make_file(const std::string &contents)
{
    char path[] = "/tmp/ucx_test_config_XXXXXX";
    int fd      = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ((ssize_t)contents.size(), write(fd, contents.data(), contents.size()));
    close(fd);
    m_files.push_back(path);
    return path;
}

std::string config_sandbox::log() const
{
    std::ifstream in(m_log_path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

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

bool refuse_syscall(long nr, int error)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)error & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {(unsigned short)(sizeof(filter) / sizeof(filter[0])), filter};

    /* no_new_privs lets an unprivileged process install a filter. */
    return (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) &&
           (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

} // namespace ucx_test
