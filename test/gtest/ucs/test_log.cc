#include <ucs/debug/log.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

class ucs_log : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_saved_level = ucs_log_level;
        snprintf(m_path, sizeof(m_path), "/tmp/ucx_test_log_%d_XXXXXX", (int)getpid());
        int fd = mkstemp(m_path);
        ASSERT_GE(fd, 0);
        close(fd);
        ASSERT_EQ(UCS_OK, ucs_log_set_file(m_path));
    }

    void TearDown() override
    {
        ucs_log_set_file("stderr");
        ucs_log_set_level(m_saved_level);
        unlink(m_path);
    }

    std::string contents()
    {
        std::ifstream in(m_path);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    ucs_log_level_t m_saved_level;
    char            m_path[128];
};

TEST_F(ucs_log, message_carries_pid_location_and_level)
{
    ucs_log_set_level(UCS_LOG_LEVEL_INFO);
    int line = __LINE__ + 1;
    ucs_info("hello %d", 42);

    std::string text = contents();
    std::ostringstream loc, pid;
    loc << "test_log.cc:" << line;
    pid << "[" << getpid() << ":";
    EXPECT_NE(std::string::npos, text.find("hello 42")) << text;
    EXPECT_NE(std::string::npos, text.find(loc.str())) << text;
    EXPECT_NE(std::string::npos, text.find(pid.str())) << text;
    EXPECT_NE(std::string::npos, text.find("info")) << text;
}

TEST_F(ucs_log, messages_above_the_level_are_dropped)
{
    ucs_log_set_level(UCS_LOG_LEVEL_WARN);
    ucs_debug("should not appear");
    ucs_warn("should appear");
    std::string text = contents();
    EXPECT_EQ(std::string::npos, text.find("should not appear")) << text;
    EXPECT_NE(std::string::npos, text.find("should appear")) << text;
}

TEST_F(ucs_log, warn_once_prints_once)
{
    ucs_log_set_level(UCS_LOG_LEVEL_WARN);
    for (int i = 0; i < 3; ++i) {
        ucs_warn_once("only once please");
    }
    std::string text = contents();
    size_t first     = text.find("only once please");
    ASSERT_NE(std::string::npos, first);
    EXPECT_EQ(std::string::npos, text.find("only once please", first + 1));
}

/* A binding (UCXX) logs through ucs_log_component() with a component of its
 * own: its level decides, its name is printed, the arguments after the format
 * are formatted. Before the dispatcher took upstream's signature, the
 * component pointer was read as the format and the lines were garbage. */
TEST_F(ucs_log, component_of_a_binding_prints_its_name_and_arguments)
{
    ucs_log_component_config_t comp = {};
    comp.log_level                  = UCS_LOG_LEVEL_DEBUG;
    snprintf(comp.name, sizeof(comp.name), "%s", "UCXX");
    comp.file_filter = "*";

    ucs_log_set_level(UCS_LOG_LEVEL_WARN); /* the library's own stays quiet */
    ucs_log_component(UCS_LOG_LEVEL_DEBUG, &comp, "worker %s has %d eps", "w0", 7);
    ucs_log_component(UCS_LOG_LEVEL_TRACE, &comp, "above the component's level");

    std::string text = contents();
    EXPECT_NE(std::string::npos, text.find("UCXX debug worker w0 has 7 eps")) << text;
    EXPECT_EQ(std::string::npos, text.find("above the component's level")) << text;
}

TEST_F(ucs_log, component_file_filter_drops_other_files)
{
    ucs_log_component_config_t comp = {};
    comp.log_level                  = UCS_LOG_LEVEL_INFO;
    memset(comp.name, 'N', sizeof(comp.name)); /* not terminated: read 16 bytes */

    comp.file_filter = "other_*.cc";
    ucs_log_component(UCS_LOG_LEVEL_INFO, &comp, "filtered out");
    comp.file_filter = "test_lo?.cc";
    ucs_log_component(UCS_LOG_LEVEL_INFO, &comp, "passes the filter");

    std::string text = contents();
    EXPECT_EQ(std::string::npos, text.find("filtered out")) << text;
    EXPECT_NE(std::string::npos,
              text.find(std::string(16, 'N') + " info  passes the filter"))
            << text;
}

TEST_F(ucs_log, file_name_expands_pid)
{
    std::ostringstream expected;
    expected << "/tmp/ucx_test_expand_" << getpid() << ".log";
    ASSERT_EQ(UCS_OK, ucs_log_set_file("/tmp/ucx_test_expand_%p.log"));
    ucs_log_set_level(UCS_LOG_LEVEL_WARN);
    ucs_warn("into the expanded file");
    ucs_log_set_file("stderr");
    EXPECT_EQ(0, access(expected.str().c_str(), R_OK)) << expected.str();
    unlink(expected.str().c_str());
}

TEST_F(ucs_log, unopenable_file_is_an_error)
{
    EXPECT_EQ(UCS_ERR_IO_ERROR, ucs_log_set_file("/nonexistent-dir/x/y.log"));
}

TEST(ucs_log_death, fatal_prints_message_and_backtrace_then_aborts)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(ucs_fatal("broken invariant %d", 7),
                 "Fatal: broken invariant 7(.|\n)*backtrace");
}

TEST(ucs_log_levels, names_cover_every_level)
{
    for (int l = 0; l < UCS_LOG_LEVEL_LAST; ++l) {
        ASSERT_NE(nullptr, ucs_log_level_names[l]) << l;
    }
    EXPECT_EQ(nullptr, ucs_log_level_names[UCS_LOG_LEVEL_LAST]);
    EXPECT_STREQ("debug", ucs_log_level_names[UCS_LOG_LEVEL_DEBUG]);
}
