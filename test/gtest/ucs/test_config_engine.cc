/*
 * The configuration engine: precedence of defaults, file and environment,
 * configuration files, error reporting, printing, the table registry and
 * warnings about unknown variables. libucs global options are here too.
 */
#include <ucs/config/global_opts.h>
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include "common/test_helpers.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct cfg_test_opts {
    unsigned                level;
    size_t                  size;
    double                  timeout;
    char                    *name;
    ucs_config_allow_list_t tls;
    size_t                  frag[UCS_MEMORY_TYPE_LAST];
    int                     secret;
};

const ucs_config_field_t cfg_test_fields[] = {
    {"LEVEL", "warn", "A log level.", offsetof(cfg_test_opts, level),
     UCS_CONFIG_TYPE_LOG_LEVEL},
    {"SIZE", "8K", "A size.", offsetof(cfg_test_opts, size),
     UCS_CONFIG_TYPE_SIZE},
    {"TIMEOUT", "10ms", "A time.", offsetof(cfg_test_opts, timeout),
     UCS_CONFIG_TYPE_TIME},
    {"NAME", "dflt", "A string\nwith two doc lines.",
     offsetof(cfg_test_opts, name), UCS_CONFIG_TYPE_STRING},
    {"TLS", "all", "An allow list.", offsetof(cfg_test_opts, tls),
     UCS_CONFIG_TYPE_ALLOW_LIST},
    {"FRAG", "host:512K,cuda:4M", "A size per memory type.",
     offsetof(cfg_test_opts, frag), UCS_CONFIG_TYPE_MEMTYPE_SIZE_MAP},
    {"SECRET", "0", "A hidden knob.", offsetof(cfg_test_opts, secret),
     UCS_CONFIG_TYPE_INT, UCS_CONFIG_FIELD_HIDDEN},
    {NULL}
};

ucs_config_table_entry_t cfg_test_entry = {
    "Config engine test", "CFGTEST_", cfg_test_fields, sizeof(cfg_test_opts),
    NULL
};

/* Every variable a test here may set; unset around each test so that the
 * caller's environment cannot change the outcome. */
const char *cfg_test_vars[] = {
    "UCX_CONFIG_FILE", "UCX_LOG_LEVEL", "UCX_LOG_FILE", "UCX_MODULE_DIR",
    "UCX_TLS", "UCX_CFGTEST_LEVEL", "UCX_CFGTEST_SIZE", "UCX_CFGTEST_TIMEOUT",
    "UCX_CFGTEST_NAME", "UCX_CFGTEST_TLS", "UCX_CFGTEST_FRAG",
    "UCX_CFGTEST_SECRET", "UCX_MYAPP_CFGTEST_SIZE", "UCX_MYAPP_CFGTEST_NAME",
    "UCX_LOG_LEVL", "UCX_CFGTEST_SIZ"
};

} // namespace

class ucs_config_engine : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_sandbox.reset(new ucx_test::config_sandbox());
        for (const char *var : cfg_test_vars) {
            setenv(var, NULL);
        }

        m_filled = false;
    }

    void TearDown() override
    {
        release();
        ucs_config_unregister_table(&cfg_test_entry);
        m_sandbox.reset();
    }

    void setenv(const char *name, const char *value)
    {
        m_sandbox->setenv(name, value);
    }

    std::string make_file(const std::string &contents)
    {
        return m_sandbox->make_file(contents);
    }

    std::string log() const
    {
        return m_sandbox->log();
    }

    ucs_status_t fill(const char *env_prefix = NULL,
                      const char *filename   = NULL)
    {
        release();
        ucs_status_t status = ucs_config_parser_fill_opts(&m_opts,
                                                          &cfg_test_entry,
                                                          env_prefix,
                                                          filename);
        m_filled = (status == UCS_OK);
        return status;
    }

    void release()
    {
        if (m_filled) {
            ucs_config_parser_release_opts(&m_opts, &cfg_test_entry);
            m_filled = false;
        }
    }

    std::string get(const char *name) const
    {
        char buf[256];
        EXPECT_EQ(UCS_OK, ucs_config_parser_get_value(&m_opts,
                                                      &cfg_test_entry, name,
                                                      buf, sizeof(buf)));
        return buf;
    }

    static std::string print(const void *opts, int flags)
    {
        char *buf   = NULL;
        size_t size = 0;
        FILE *f     = open_memstream(&buf, &size);
        ucs_config_parser_print_opts(f, NULL, opts, &cfg_test_entry, flags);
        fclose(f);
        std::string text(buf, size);
        free(buf);
        return text;
    }

    static ucs_status_t print_all(const char *prefix, int flags,
                                  std::string &text)
    {
        char *buf   = NULL;
        size_t size = 0;
        FILE *f     = open_memstream(&buf, &size);
        ucs_status_t status = ucs_config_parser_print_all_opts(f, prefix,
                                                               flags);
        fclose(f);
        text.assign(buf, size);
        free(buf);
        return status;
    }

    static bool contains(const std::string &text, const std::string &what)
    {
        return text.find(what) != std::string::npos;
    }

    cfg_test_opts m_opts;
    bool          m_filled;

private:
    std::unique_ptr<ucx_test::config_sandbox> m_sandbox;
};


/* ---- precedence ------------------------------------------------------ */

TEST_F(ucs_config_engine, defaults_apply_when_nothing_is_set)
{
    ASSERT_EQ(UCS_OK, fill());
    EXPECT_EQ((unsigned)UCS_LOG_LEVEL_WARN, m_opts.level);
    EXPECT_EQ(8192u, m_opts.size);
    EXPECT_DOUBLE_EQ(0.01, m_opts.timeout);
    EXPECT_STREQ("dflt", m_opts.name);
    EXPECT_EQ(UCS_CONFIG_ALLOW_LIST_ALLOW_ALL, m_opts.tls.mode);
    EXPECT_EQ(512u * 1024, m_opts.frag[UCS_MEMORY_TYPE_HOST]);
    EXPECT_EQ(4u << 20, m_opts.frag[UCS_MEMORY_TYPE_CUDA]);
    EXPECT_EQ(0u, m_opts.frag[UCS_MEMORY_TYPE_ROCM]);
}

TEST_F(ucs_config_engine, precedence_is_default_file_env_prefixed_env)
{
    std::string file = make_file("UCX_CFGTEST_SIZE=1M\n"
                                 "UCX_CFGTEST_NAME=from_file\n"
                                 "UCX_CFGTEST_TIMEOUT=2s\n");

    ASSERT_EQ(UCS_OK, fill("MYAPP", file.c_str()));
    EXPECT_EQ(1u << 20, m_opts.size);
    EXPECT_STREQ("from_file", m_opts.name);
    EXPECT_EQ((unsigned)UCS_LOG_LEVEL_WARN, m_opts.level);

    setenv("UCX_CFGTEST_SIZE", "2M");
    setenv("UCX_CFGTEST_NAME", "from_env");
    ASSERT_EQ(UCS_OK, fill("MYAPP", file.c_str()));
    EXPECT_EQ(2u << 20, m_opts.size);
    EXPECT_STREQ("from_env", m_opts.name);
    EXPECT_DOUBLE_EQ(2.0, m_opts.timeout); /* only in the file */

    setenv("UCX_MYAPP_CFGTEST_SIZE", "3M");
    ASSERT_EQ(UCS_OK, fill("MYAPP", file.c_str()));
    EXPECT_EQ(3u << 20, m_opts.size);
    EXPECT_STREQ("from_env", m_opts.name);

    /* Without the prefix, the prefixed variable is not read. */
    ASSERT_EQ(UCS_OK, fill(NULL, file.c_str()));
    EXPECT_EQ(2u << 20, m_opts.size);
}

TEST_F(ucs_config_engine, prefixed_key_in_file_beats_plain_key_in_file)
{
    std::string file = make_file("UCX_MYAPP_CFGTEST_SIZE=5K\n"
                                 "UCX_CFGTEST_SIZE=1K\n");
    ASSERT_EQ(UCS_OK, fill("MYAPP_", file.c_str())); /* '_' is optional */
    EXPECT_EQ(5u * 1024, m_opts.size);
}

TEST_F(ucs_config_engine, memtype_map_layers_merge_per_type)
{
    std::string file = make_file("UCX_CFGTEST_FRAG=rocm:1K\n");
    setenv("UCX_CFGTEST_FRAG", "host:2K");
    ASSERT_EQ(UCS_OK, fill(NULL, file.c_str()));
    EXPECT_EQ(2048u, m_opts.frag[UCS_MEMORY_TYPE_HOST]);
    EXPECT_EQ(4u << 20, m_opts.frag[UCS_MEMORY_TYPE_CUDA]);
    EXPECT_EQ(1024u, m_opts.frag[UCS_MEMORY_TYPE_ROCM]);
}

TEST_F(ucs_config_engine, invalid_env_prefix_is_rejected)
{
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill("MY-APP"));
    EXPECT_TRUE(contains(log(), "MY-APP")) << log();
}


/* ---- configuration files --------------------------------------------- */

TEST_F(ucs_config_engine, config_file_comes_from_UCX_CONFIG_FILE)
{
    std::string file = make_file("UCX_CFGTEST_SIZE=64K\n");
    setenv("UCX_CONFIG_FILE", file.c_str());
    ASSERT_EQ(UCS_OK, fill());
    EXPECT_EQ(65536u, m_opts.size);

    /* A file named by the caller replaces it. */
    std::string other = make_file("UCX_CFGTEST_SIZE=32K\n");
    ASSERT_EQ(UCS_OK, fill(NULL, other.c_str()));
    EXPECT_EQ(32768u, m_opts.size);
}

TEST_F(ucs_config_engine, empty_UCX_CONFIG_FILE_means_no_file)
{
    setenv("UCX_CONFIG_FILE", "");
    ASSERT_EQ(UCS_OK, fill());
    EXPECT_EQ(8192u, m_opts.size);
}

TEST_F(ucs_config_engine, missing_config_file_is_an_io_error)
{
    setenv("UCX_CONFIG_FILE", "/nonexistent/ucx.conf");
    EXPECT_EQ(UCS_ERR_IO_ERROR, fill());
    EXPECT_TRUE(contains(log(), "/nonexistent/ucx.conf")) << log();
}

TEST_F(ucs_config_engine, file_allows_comments_blank_lines_and_spaces)
{
    std::string file = make_file("# a comment\n"
                                 "\n"
                                 "   \t\n"
                                 "  # indented comment\n"
                                 "  UCX_CFGTEST_SIZE  =  16K  \r\n"
                                 "UCX_CFGTEST_NAME=a=b #not a comment\n"
                                 "UCX_CFGTEST_TLS=\n"
                                 "UCX_CFGTEST_LEVEL=info"); /* no newline */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill(NULL, file.c_str()))
            << "an empty allow list is an error";
    EXPECT_TRUE(contains(log(), ":7: UCX_CFGTEST_TLS: invalid value ''"))
            << log();

    std::string good = make_file("# a comment\n"
                                 "\n"
                                 "   \t\n"
                                 "  # indented comment\n"
                                 "  UCX_CFGTEST_SIZE  =  16K  \r\n"
                                 "UCX_CFGTEST_NAME=a=b #not a comment\n"
                                 "UCX_CFGTEST_NAME=\n"
                                 "UCX_CFGTEST_NAME=last wins\n"
                                 "UCX_CFGTEST_LEVEL=info");
    ASSERT_EQ(UCS_OK, fill(NULL, good.c_str()));
    EXPECT_EQ(16384u, m_opts.size);
    EXPECT_STREQ("last wins", m_opts.name);
    EXPECT_EQ((unsigned)UCS_LOG_LEVEL_INFO, m_opts.level);
}

TEST_F(ucs_config_engine, malformed_line_is_an_error_naming_file_and_line)
{
    for (const char *bad : {"UCX_CFGTEST_SIZE 16K", "CFGTEST_SIZE=1",
                            "=5", "UCX_=1", "UCX_CFG-TEST=1",
                            "export UCX_CFGTEST_SIZE=1"}) {
        std::string file = make_file(std::string("# ok\nUCX_CFGTEST_SIZE=1K\n") +
                                     bad + "\n");
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill(NULL, file.c_str())) << bad;
        EXPECT_TRUE(contains(log(), file + ":3: malformed line")) << log();
    }
}

TEST_F(ucs_config_engine, bad_value_in_file_names_file_line_and_variable)
{
    std::string file = make_file("\nUCX_CFGTEST_SIZE=4Mx\n");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill(NULL, file.c_str()));
    EXPECT_TRUE(contains(log(), file + ":2: UCX_CFGTEST_SIZE: invalid value "
                                       "'4Mx': expected a size"))
            << log();
}


/* ---- errors ---------------------------------------------------------- */

TEST_F(ucs_config_engine, bad_value_fails_naming_variable_value_and_forms)
{
    setenv("UCX_CFGTEST_LEVEL", "verbose");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill());
    EXPECT_TRUE(contains(log(), "UCX_CFGTEST_LEVEL: invalid value 'verbose': "
                                "expected one of fatal,error,warn,diag,info,"
                                "debug,trace,req,data,async,func,poll"))
            << log();
}

TEST_F(ucs_config_engine, bad_prefixed_value_names_the_prefixed_variable)
{
    setenv("UCX_MYAPP_CFGTEST_SIZE", "-1");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill("MYAPP"));
    EXPECT_TRUE(contains(log(), "UCX_MYAPP_CFGTEST_SIZE: invalid value '-1'"))
            << log();
}

TEST_F(ucs_config_engine, bad_value_never_falls_back_to_the_default)
{
    for (const char *bad : {"", "99999999999999999999K", "4Mx", "-4K",
                            "10 K"}) {
        setenv("UCX_CFGTEST_SIZE", bad);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill()) << "'" << bad << "'";
    }
    setenv("UCX_CFGTEST_SIZE", "1K");
    setenv("UCX_CFGTEST_TIMEOUT", "10 ms");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, fill());
}


/* ---- set/get/clone --------------------------------------------------- */

TEST_F(ucs_config_engine, set_value_changes_one_field)
{
    ASSERT_EQ(UCS_OK, fill());
    EXPECT_EQ(UCS_OK, ucs_config_parser_set_value(&m_opts, &cfg_test_entry,
                                                  "CFGTEST_TLS", "^tcp,shm"));
    EXPECT_EQ("^tcp,shm", get("CFGTEST_TLS"));
    EXPECT_EQ(UCS_OK, ucs_config_parser_set_value(&m_opts, &cfg_test_entry,
                                                  "CFGTEST_FRAG", "rocm:8K"));
    EXPECT_EQ("host:512K,cuda:4M,cuda-managed:0,rocm:8K,rocm-managed:0",
              get("CFGTEST_FRAG"));
}

TEST_F(ucs_config_engine, set_value_of_unknown_name_is_no_elem)
{
    ASSERT_EQ(UCS_OK, fill());
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              ucs_config_parser_set_value(&m_opts, &cfg_test_entry, "SIZE",
                                          "1K")); /* needs the table prefix */
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              ucs_config_parser_set_value(&m_opts, &cfg_test_entry,
                                          "CFGTEST_NOPE", "1"));
    char buf[16];
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              ucs_config_parser_get_value(&m_opts, &cfg_test_entry,
                                          "CFGTEST_NOPE", buf, sizeof(buf)));
}

TEST_F(ucs_config_engine, set_value_with_bad_value_keeps_the_old_value)
{
    ASSERT_EQ(UCS_OK, fill());
    ASSERT_EQ(UCS_OK, ucs_config_parser_set_value(&m_opts, &cfg_test_entry,
                                                  "CFGTEST_TLS", "a,b"));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucs_config_parser_set_value(&m_opts, &cfg_test_entry,
                                          "CFGTEST_TLS", "a,,b"));
    EXPECT_EQ("a,b", get("CFGTEST_TLS"));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucs_config_parser_set_value(&m_opts, &cfg_test_entry,
                                          "CFGTEST_FRAG", "rocm:1K,gpu:2K"));
    EXPECT_EQ(0u, m_opts.frag[UCS_MEMORY_TYPE_ROCM]); /* no partial update */
    EXPECT_TRUE(contains(log(), "UCX_CFGTEST_FRAG: invalid value "
                                "'rocm:1K,gpu:2K'"))
            << log();
}

TEST_F(ucs_config_engine, clone_opts_is_a_deep_copy)
{
    setenv("UCX_CFGTEST_TLS", "x,y");
    ASSERT_EQ(UCS_OK, fill());
    cfg_test_opts copy;
    ASSERT_EQ(UCS_OK, ucs_config_parser_clone_opts(&m_opts, &copy,
                                                   &cfg_test_entry));
    EXPECT_NE(m_opts.name, copy.name);
    EXPECT_NE(m_opts.tls.array.names, copy.tls.array.names);
    release();
    EXPECT_STREQ("dflt", copy.name);
    EXPECT_STREQ("y", copy.tls.array.names[1]);
    ucs_config_parser_release_opts(&copy, &cfg_test_entry);
}

TEST_F(ucs_config_engine, fill_defaults_ignores_file_and_environment)
{
    setenv("UCX_CFGTEST_SIZE", "bad value");
    cfg_test_opts opts;
    ASSERT_EQ(UCS_OK, ucs_config_parser_fill_defaults(&opts, &cfg_test_entry));
    EXPECT_EQ(8192u, opts.size);
    ucs_config_parser_release_opts(&opts, &cfg_test_entry);
}


/* ---- printing -------------------------------------------------------- */

TEST_F(ucs_config_engine, print_opts_writes_name_value_lines)
{
    setenv("UCX_CFGTEST_SIZE", "1.5M");
    ASSERT_EQ(UCS_OK, fill());
    std::string text = print(&m_opts, UCS_CONFIG_PRINT_CONFIG);
    EXPECT_TRUE(contains(text, "UCX_CFGTEST_SIZE=1536K\n")) << text;
    EXPECT_TRUE(contains(text, "UCX_CFGTEST_LEVEL=warn\n")) << text;
    EXPECT_TRUE(contains(text, "UCX_CFGTEST_TIMEOUT=10ms\n")) << text;
    EXPECT_FALSE(contains(text, "SECRET")) << text;
    EXPECT_FALSE(contains(text, "#")) << text;
}

TEST_F(ucs_config_engine, print_opts_doc_header_hidden_and_comment_default)
{
    setenv("UCX_CFGTEST_SIZE", "1M");
    ASSERT_EQ(UCS_OK, fill());
    std::string text = print(&m_opts,
                             UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER |
                                     UCS_CONFIG_PRINT_DOC |
                                     UCS_CONFIG_PRINT_HIDDEN |
                                     UCS_CONFIG_PRINT_COMMENT_DEFAULT);
    EXPECT_TRUE(contains(text, "# Config engine test\n")) << text;
    EXPECT_TRUE(contains(text, "# A string\n# with two doc lines.\n")) << text;
    EXPECT_TRUE(contains(text, "# syntax:  one of fatal,error")) << text;
    EXPECT_TRUE(contains(text, "# default: 8K\n")) << text;
    EXPECT_TRUE(contains(text, "\nUCX_CFGTEST_SIZE=1M\n")) << text;
    EXPECT_TRUE(contains(text, "\n# UCX_CFGTEST_LEVEL=warn\n")) << text;
    EXPECT_TRUE(contains(text, "UCX_CFGTEST_SECRET=0\n")) << text;
}

TEST_F(ucs_config_engine, print_all_lists_every_registered_table)
{
    std::string text;
    ASSERT_EQ(UCS_OK, print_all("UCX", UCS_CONFIG_PRINT_CONFIG, text));
    EXPECT_TRUE(contains(text, "UCX_LOG_LEVEL=warn\n")) << text;
    EXPECT_TRUE(contains(text, "UCX_LOG_FILE=stderr\n")) << text;
    EXPECT_TRUE(contains(text, "UCX_MODULE_DIR=\n")) << text;
    EXPECT_TRUE(contains(text, "UCX_TLS=all\n")) << text; /* libucp's table */
    EXPECT_FALSE(contains(text, "UCX_CFGTEST_")) << text;

    ucs_config_register_table(&cfg_test_entry);
    ucs_config_register_table(&cfg_test_entry); /* twice is harmless */
    ASSERT_EQ(UCS_OK, print_all("UCX", UCS_CONFIG_PRINT_CONFIG |
                                               UCS_CONFIG_PRINT_HEADER,
                                text));
    EXPECT_TRUE(contains(text, "# Config engine test\n")) << text;
    size_t first = text.find("UCX_CFGTEST_SIZE=8K\n");
    ASSERT_NE(std::string::npos, first) << text;
    EXPECT_EQ(std::string::npos, text.find("UCX_CFGTEST_SIZE=", first + 1));

    ucs_config_unregister_table(&cfg_test_entry);
    ASSERT_EQ(UCS_OK, print_all("UCX", UCS_CONFIG_PRINT_CONFIG, text));
    EXPECT_FALSE(contains(text, "UCX_CFGTEST_")) << text;
}

TEST_F(ucs_config_engine, print_all_output_reads_back_as_a_config_file)
{
    ucs_config_register_table(&cfg_test_entry);
    setenv("UCX_LOG_LEVEL", "info");
    setenv("UCX_MODULE_DIR", "/a:/b");
    setenv("UCX_CFGTEST_SIZE", "3M");
    setenv("UCX_CFGTEST_TLS", "^tcp");
    setenv("UCX_CFGTEST_FRAG", "cuda:1M");
    setenv("UCX_CFGTEST_NAME", "with space");

    std::string text;
    ASSERT_EQ(UCS_OK, print_all("UCX", UCS_CONFIG_PRINT_CONFIG |
                                               UCS_CONFIG_PRINT_HEADER |
                                               UCS_CONFIG_PRINT_DOC |
                                               UCS_CONFIG_PRINT_HIDDEN,
                                text));
    EXPECT_TRUE(contains(text, "UCX_LOG_LEVEL=info\n")) << text;
    std::string file = make_file(text);

    for (const char *var : {"UCX_LOG_LEVEL", "UCX_MODULE_DIR",
                            "UCX_CFGTEST_SIZE", "UCX_CFGTEST_TLS",
                            "UCX_CFGTEST_FRAG", "UCX_CFGTEST_NAME"}) {
        setenv(var, NULL);
    }

    ASSERT_EQ(UCS_OK, fill(NULL, file.c_str()));
    EXPECT_EQ(3u << 20, m_opts.size);
    EXPECT_EQ("^tcp", get("CFGTEST_TLS"));
    EXPECT_EQ(1u << 20, m_opts.frag[UCS_MEMORY_TYPE_CUDA]);
    EXPECT_STREQ("with space", m_opts.name);

    ucs_global_opts_t global;
    ASSERT_EQ(UCS_OK, ucs_config_parser_fill_opts(&global,
                                                  &ucs_global_opts_table_entry,
                                                  NULL, file.c_str()));
    EXPECT_EQ(UCS_LOG_LEVEL_INFO, global.log_level);
    EXPECT_STREQ("/a:/b", global.module_dir);
    ucs_config_parser_release_opts(&global, &ucs_global_opts_table_entry);

    EXPECT_EQ(0u, ucs_config_parser_warn_unknown_file_keys(file.c_str(),
                                                           NULL))
            << log();
}

TEST_F(ucs_config_engine, print_all_fails_on_a_bad_value)
{
    setenv("UCX_LOG_LEVEL", "verbose");
    std::string text;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              print_all("UCX", UCS_CONFIG_PRINT_CONFIG, text));
    EXPECT_TRUE(contains(log(), "UCX_LOG_LEVEL: invalid value 'verbose'"))
            << log();
}

TEST_F(ucs_config_engine, print_all_with_prefix_reads_prefixed_values)
{
    ucs_config_register_table(&cfg_test_entry);
    setenv("UCX_MYAPP_CFGTEST_SIZE", "7K");
    std::string text;
    ASSERT_EQ(UCS_OK, print_all("UCX_MYAPP_", UCS_CONFIG_PRINT_CONFIG, text));
    EXPECT_TRUE(contains(text, "UCX_CFGTEST_SIZE=7K\n")) << text;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              print_all("FOO", UCS_CONFIG_PRINT_CONFIG, text));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              print_all("UCXY", UCS_CONFIG_PRINT_CONFIG, text));
}


/* ---- unknown variables ----------------------------------------------- */

TEST_F(ucs_config_engine, unknown_env_var_is_warned_with_the_closest_name)
{
    setenv("UCX_LOG_LEVL", "info");
    EXPECT_GE(ucs_config_parser_warn_unknown_env_vars(NULL), 1u);
    EXPECT_TRUE(contains(log(), "UCX_LOG_LEVL is not a known variable; did "
                                "you mean UCX_LOG_LEVEL?"))
            << log();
}

TEST_F(ucs_config_engine, known_env_vars_are_not_warned)
{
    setenv("UCX_LOG_LEVEL", "warn");
    setenv("UCX_TLS", "all");
    ucs_config_parser_warn_unknown_env_vars(NULL);
    EXPECT_FALSE(contains(log(), "UCX_LOG_LEVEL is")) << log();
    EXPECT_FALSE(contains(log(), "UCX_TLS is")) << log();
}

TEST_F(ucs_config_engine, variable_of_a_table_registered_later_is_not_flagged)
{
    setenv("UCX_CFGTEST_SIZE", "1K");
    EXPECT_FALSE(ucs_config_parser_is_known_var("UCX_CFGTEST_SIZE", NULL));

    ucs_config_register_table(&cfg_test_entry);
    EXPECT_TRUE(ucs_config_parser_is_known_var("UCX_CFGTEST_SIZE", NULL));
    setenv("UCX_CFGTEST_SIZ", "1K");
    ucs_config_parser_warn_unknown_env_vars(NULL);
    EXPECT_FALSE(contains(log(), "UCX_CFGTEST_SIZE is")) << log();
    EXPECT_TRUE(contains(log(), "UCX_CFGTEST_SIZ is not a known variable; "
                                "did you mean UCX_CFGTEST_SIZE?"))
            << log();
}

TEST_F(ucs_config_engine, prefixed_names_are_known_once_the_prefix_is_used)
{
    EXPECT_TRUE(ucs_config_parser_is_known_var("UCX_LOG_LEVEL", NULL));
    EXPECT_TRUE(ucs_config_parser_is_known_var("UCX_CONFIG_FILE", NULL));
    EXPECT_FALSE(ucs_config_parser_is_known_var("UCX_NEVERUSED_LOG_LEVEL",
                                                NULL));
    EXPECT_TRUE(ucs_config_parser_is_known_var("UCX_NEVERUSED_LOG_LEVEL",
                                               "NEVERUSED"));

    /* A fill with a prefix makes its names known to later checks. */
    EXPECT_FALSE(ucs_config_parser_is_known_var("UCX_REMEMBERED_TLS", NULL));
    ASSERT_EQ(UCS_OK, fill("REMEMBERED"));
    EXPECT_TRUE(ucs_config_parser_is_known_var("UCX_REMEMBERED_TLS", NULL));
}

TEST_F(ucs_config_engine, unknown_file_key_is_warned_with_file_and_line)
{
    std::string file = make_file("UCX_TLS=all\n"
                                 "UCX_LOG_LEVL=info\n");
    EXPECT_EQ(1u, ucs_config_parser_warn_unknown_file_keys(file.c_str(),
                                                           NULL));
    EXPECT_TRUE(contains(log(), file + ":2: UCX_LOG_LEVL is not a known "
                                       "variable; did you mean "
                                       "UCX_LOG_LEVEL?"))
            << log();

    /* The unknown key does not make the file unreadable. */
    ASSERT_EQ(UCS_OK, fill(NULL, file.c_str()));
}


/* ---- once per process: checked in a fresh process -------------------- */

namespace {

const char *once_log_var = "UCS_CONFIG_TEST_ONCE_LOG";

size_t count(const std::string &text, const std::string &what)
{
    return ucx_test::count_occurrences(text, what);
}

} // namespace

TEST(ucs_config_child, DISABLED_warn_unknown_vars_once_from_many_threads)
{
    const char *path = getenv(once_log_var);
    ASSERT_NE(nullptr, path);
    ASSERT_EQ(UCS_OK, ucs_log_set_file(path));
    ucs_log_set_level(UCS_LOG_LEVEL_WARN);

    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back(
                [] { ucs_config_parser_warn_unknown_vars_once(NULL); });
    }
    for (std::thread &t : threads) {
        t.join();
    }
    ucs_config_parser_warn_unknown_vars_once(NULL);
    ucs_log_set_file("stderr");
}

TEST_F(ucs_config_engine, unknown_vars_are_warned_once_per_process)
{
    std::string log_path = make_file("");
    std::string conf     = make_file("UCX_CFGTEST_NOPE=1\n");
    setenv(once_log_var, log_path.c_str());
    setenv("UCX_LOG_LEVL", "info");
    setenv("UCX_CONFIG_FILE", conf.c_str());

    ASSERT_EQ(0, ucx_test::run_test_in_fresh_process("ucs_config_child."
                                "DISABLED_warn_unknown_vars_once_from_many_"
                                "threads"));
    std::ifstream in(log_path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    EXPECT_EQ(1u, count(text, "UCX_LOG_LEVL is not a known variable; did "
                              "you mean UCX_LOG_LEVEL?"))
            << text;
    EXPECT_EQ(1u, count(text, conf + ":1: UCX_CFGTEST_NOPE is not a known "
                                     "variable"))
            << text;
}


/* ---- libucs global options ------------------------------------------- */

TEST_F(ucs_config_engine, global_options_have_documented_defaults)
{
    ucs_global_opts_t opts;
    ASSERT_EQ(UCS_OK, ucs_config_parser_fill_opts(&opts,
                                                  &ucs_global_opts_table_entry,
                                                  NULL, NULL));
    EXPECT_EQ(UCS_LOG_LEVEL_WARN, opts.log_level);
    EXPECT_STREQ("stderr", opts.log_file);
    EXPECT_STREQ("", opts.module_dir);
    EXPECT_STREQ("", opts.config_file);
    ucs_config_parser_release_opts(&opts, &ucs_global_opts_table_entry);
}

TEST_F(ucs_config_engine, global_options_come_from_the_environment)
{
    setenv("UCX_LOG_LEVEL", "DEBUG");
    setenv("UCX_LOG_FILE", "/tmp/ucx_%p.log");
    setenv("UCX_MODULE_DIR", "/opt/x");
    ucs_global_opts_t opts;
    ASSERT_EQ(UCS_OK, ucs_config_parser_fill_opts(&opts,
                                                  &ucs_global_opts_table_entry,
                                                  NULL, NULL));
    EXPECT_EQ(UCS_LOG_LEVEL_DEBUG, opts.log_level);
    EXPECT_STREQ("/tmp/ucx_%p.log", opts.log_file);
    EXPECT_STREQ("/opt/x", opts.module_dir);
    ucs_config_parser_release_opts(&opts, &ucs_global_opts_table_entry);
}

TEST_F(ucs_config_engine, global_opts_init_reports_bad_level_and_keeps_defaults)
{
    /* ucs_global_opts_init() runs once per process, so call it in a child. */
    pid_t pid = fork();
    if (pid == 0) {
        ::setenv("UCX_LOG_LEVEL", "verbose", 1);
        ucs_status_t status = ucs_global_opts_init();
        bool ok = (status == UCS_ERR_INVALID_PARAM) &&
                  (ucs_global_opts.log_level == UCS_LOG_LEVEL_WARN) &&
                  (ucs_global_opts.log_file != NULL);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(0, WEXITSTATUS(status));
    EXPECT_TRUE(contains(log(), "UCX_LOG_LEVEL: invalid value 'verbose'"))
            << log();
}
