/* A module for the loader's tests: its constructor must have run by the time
 * ucs_module_load() returns, which is how real modules register themselves. */
#include <ucs/sys/compiler_def.h>

static int test_dummy_constructed = 0;

static void UCS_F_CTOR test_dummy_init(void)
{
    test_dummy_constructed = 42;
}

int test_dummy_value(void);

int test_dummy_value(void)
{
    return test_dummy_constructed;
}
