/**
 * @file test_helpers.h
 * Small utilities shared by test suites.
 */
#ifndef UCX_TEST_HELPERS_H_
#define UCX_TEST_HELPERS_H_

#include <cstdlib>
#include <string>

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
 * Run this test binary again, in a fresh process that inherits the
 * environment, with only @a test selected (disabled tests allowed), for
 * behaviour that depends on process-wide state ("once per process", objects
 * no earlier test has loaded). The child's report goes to /dev/null.
 *
 * @return the child's exit status (0: the test passed), -1 if it did not
 *         exit normally.
 */
int run_test_in_fresh_process(const char *test);

} // namespace ucx_test

#endif
