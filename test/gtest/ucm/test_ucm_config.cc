/*
 * UCX_MEM_CUDA_HOOK_MODE, read through the configuration engine.
 */
#include <ucm/ucm_config.h>

#include "common/test_helpers.h"

#include <gtest/gtest.h>

#include <string>

TEST(ucm_config, cuda_hook_mode_defaults_to_bistro)
{
    ucx_test::scoped_setenv env("UCX_MEM_CUDA_HOOK_MODE", NULL);
    ucm_config_t config;

    ASSERT_EQ(UCS_OK, ucm_config_read(&config));
    EXPECT_EQ((unsigned)UCM_CUDA_HOOK_MODE_BISTRO, config.cuda_hook_mode);
}

TEST(ucm_config, cuda_hook_mode_accepts_reloc_and_none)
{
    ucm_config_t config;

    {
        ucx_test::scoped_setenv env("UCX_MEM_CUDA_HOOK_MODE", "reloc");
        ASSERT_EQ(UCS_OK, ucm_config_read(&config));
        EXPECT_EQ((unsigned)UCM_CUDA_HOOK_MODE_RELOC, config.cuda_hook_mode);
    }
    {
        ucx_test::scoped_setenv env("UCX_MEM_CUDA_HOOK_MODE", "none");
        ASSERT_EQ(UCS_OK, ucm_config_read(&config));
        EXPECT_EQ((unsigned)UCM_CUDA_HOOK_MODE_NONE, config.cuda_hook_mode);
    }
}

TEST(ucm_config, bad_cuda_hook_mode_is_an_error_naming_the_variable)
{
    ucx_test::scoped_setenv env("UCX_MEM_CUDA_HOOK_MODE", "patch-everything");
    ucm_config_t config;
    ucs_status_t status;

    testing::internal::CaptureStderr();
    status = ucm_config_read(&config);
    fflush(stderr);
    std::string err = testing::internal::GetCapturedStderr();

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, status);
    EXPECT_NE(std::string::npos, err.find("UCX_MEM_CUDA_HOOK_MODE")) << err;
    EXPECT_NE(std::string::npos, err.find("patch-everything")) << err;
}
