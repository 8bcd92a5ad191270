#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_init.h"

#include <ucs/sys/module.h>
#include <ucs/debug/log.h>

#include <pthread.h>

static pthread_once_t uct_modules_once = PTHREAD_ONCE_INIT;
static unsigned uct_module_count;

static void uct_load_modules_once(void)
{
    uct_module_count = ucs_module_load_all("uct");
    ucs_debug("libuct: %u transport module(s) loaded", uct_module_count);
}

unsigned uct_load_modules(void)
{
    pthread_once(&uct_modules_once, uct_load_modules_once);
    return uct_module_count;
}
