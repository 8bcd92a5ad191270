/* A module whose constructor calls the module loader, as libucm's does when
 * it is pulled in by a transport module: loading it must not deadlock. */
#include <ucs/sys/module.h>

static int test_nested_status = -1000;

static void UCS_F_CTOR test_nested_init(void)
{
    test_nested_status = (int)ucs_module_load("test", "dummy", NULL);
}

int test_nested_load_status(void);

int test_nested_load_status(void)
{
    return test_nested_status;
}
