/**
 * @file test_helpers.h
 * Small utilities shared by test suites.
 */
#ifndef UCX_TEST_HELPERS_H_
#define UCX_TEST_HELPERS_H_

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace ucx_test {

/**
 * Sets an environment variable for the lifetime of the object and restores
 * the previous value (or absence) afterwards, so tests do not leak settings.
 */
class scoped_setenv {
public:
    scoped_setenv(const char *name, const char *value) : m_name(name)
    {
        const char *old = getenv(name);
        m_had_old       = (old != NULL);
        if (m_had_old) {
            m_old = old;
        }
        if (value == NULL) {
            unsetenv(name);
        } else {
            setenv(name, value, 1);
        }
    }

    ~scoped_setenv()
    {
        if (m_had_old) {
            setenv(m_name.c_str(), m_old.c_str(), 1);
        } else {
            unsetenv(m_name.c_str());
        }
    }

private:
    std::string m_name;
    std::string m_old;
    bool        m_had_old;
};

/**
 * What a configuration test changes, undone on destruction in reverse order:
 * environment variables, temporary files, and the log, which is captured in
 * a temporary file at warning level so tests can check what was reported.
 */
class config_sandbox {
public:
    config_sandbox();
    ~config_sandbox();

    /** Set (or, with NULL, unset) a variable until the sandbox ends. */
    void setenv(const char *name, const char *value);

    /** A temporary file holding @a contents, removed when the sandbox ends. */
    std::string make_file(const std::string &contents);

    /** Everything logged since the sandbox began. */
    std::string log() const;

private:
    std::vector<std::unique_ptr<scoped_setenv>> m_env;
    std::vector<std::string>                    m_files;
    std::string                                 m_log_path;
    int                                         m_saved_level;
};

/** How many times @a what occurs in @a text (e.g. a message in a log). */
inline size_t count_occurrences(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t pos = text.find(what); pos != std::string::npos;
         pos        = text.find(what, pos + 1)) {
        ++n;
    }
    return n;
}

/**
 * Run this test binary again, in a fresh process that inherits the
 * environment, with only @a test selected (disabled tests allowed), for
 * behaviour that depends on process-wide state ("once per process", objects
 * no earlier test has loaded). The child's report goes to /dev/null.
 *
 * @return the child's exit status (0: the test passed), -1 if it did not
 *         exit normally.
 */
int run_test_in_fresh_process(const char *test);

/**
 * From now on, system call @a nr fails with @a error in the calling process
 * and every child it forks (a seccomp filter; there is no undoing it, so
 * call it only in a forked child). Tests use it for the kernels and
 * container profiles that lack or refuse a call (pidfd_open, pidfd_getfd).
 *
 * @return whether the filter took hold.
 */
bool refuse_syscall(long nr, int error);

} // namespace ucx_test

#endif
