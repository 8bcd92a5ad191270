/*
 * Value parsers of the configuration engine: what each accepts, what it
 * rejects, and that writing a value and reading it back is the identity.
 */
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

const ucs_config_parser_t p_string      = UCS_CONFIG_TYPE_STRING;
const ucs_config_parser_t p_bool        = UCS_CONFIG_TYPE_BOOL;
const ucs_config_parser_t p_ternary     = UCS_CONFIG_TYPE_TERNARY;
const ucs_config_parser_t p_ternary_a   = UCS_CONFIG_TYPE_TERNARY_AUTO;
const ucs_config_parser_t p_on_off      = UCS_CONFIG_TYPE_ON_OFF;
const ucs_config_parser_t p_on_off_a    = UCS_CONFIG_TYPE_ON_OFF_AUTO;
const ucs_config_parser_t p_int         = UCS_CONFIG_TYPE_INT;
const ucs_config_parser_t p_uint        = UCS_CONFIG_TYPE_UINT;
const ucs_config_parser_t p_uint_inf    =
        UCS_CONFIG_TYPE_UINT_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO);
const ucs_config_parser_t p_ulong       = UCS_CONFIG_TYPE_ULONG;
const ucs_config_parser_t p_ulong_inf   =
        UCS_CONFIG_TYPE_ULONG_EX(UCS_CONFIG_PARSE_INF);
const ucs_config_parser_t p_size        = UCS_CONFIG_TYPE_SIZE;
const ucs_config_parser_t p_size_inf    =
        UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO);
const ucs_config_parser_t p_time        = UCS_CONFIG_TYPE_TIME;
const ucs_config_parser_t p_time_inf    =
        UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO);
const ucs_config_parser_t p_double      = UCS_CONFIG_TYPE_DOUBLE;
const ucs_config_parser_t p_log_level   = UCS_CONFIG_TYPE_LOG_LEVEL;
const char *color_names[]               = {"red", "green", "blue", NULL};
const ucs_config_parser_t p_color       = UCS_CONFIG_TYPE_ENUM(color_names);
const ucs_config_parser_t p_color_bits  = UCS_CONFIG_TYPE_BITMAP(color_names);
const ucs_config_parser_t p_memtypes    = UCS_CONFIG_TYPE_MEMTYPE_BITMAP;
const ucs_config_parser_t p_strings     = UCS_CONFIG_TYPE_STRING_ARRAY;
const ucs_config_parser_t p_allow       = UCS_CONFIG_TYPE_ALLOW_LIST;
const ucs_config_parser_t p_memtype_map = UCS_CONFIG_TYPE_MEMTYPE_SIZE_MAP;

/*
 * A value of any parser: zeroed storage of the parser's size, released by
 * the parser when the object goes away.
 */
class value {
public:
    explicit value(const ucs_config_parser_t &parser) :
        m_parser(parser), m_buf((parser.size / sizeof(uint64_t)) + 1, 0)
    {
    }

    ~value()
    {
        if (m_parser.release != NULL) {
            m_parser.release(ptr(), &m_parser);
        }
    }

    ucs_status_t read(const char *str)
    {
        return m_parser.read(str, ptr(), &m_parser);
    }

    std::string write() const
    {
        size_t len = m_parser.write(ptr(), NULL, 0, &m_parser);
        std::string str(len + 1, '\0');
        EXPECT_EQ(len, m_parser.write(ptr(), &str[0], len + 1, &m_parser));
        str.resize(len);
        return str;
    }

    template <typename T> T &as()
    {
        return *reinterpret_cast<T*>(ptr());
    }

    void *ptr()
    {
        return m_buf.data();
    }

    const void *ptr() const
    {
        return m_buf.data();
    }

private:
    const ucs_config_parser_t &m_parser;
    std::vector<uint64_t>     m_buf; /* aligned for every value type */
};

std::string help(const ucs_config_parser_t &parser)
{
    size_t len = parser.help(NULL, 0, &parser);
    std::string str(len + 1, '\0');
    parser.help(&str[0], len + 1, &parser);
    str.resize(len);
    return str;
}

/* Reads @a str and returns the canonical string, or "<error>". */
std::string canonical(const ucs_config_parser_t &parser, const char *str)
{
    value v(parser);
    return (v.read(str) == UCS_OK) ? v.write() : "<error>";
}

void expect_rejected(const ucs_config_parser_t &parser,
                     const std::vector<const char*> &inputs)
{
    for (const char *input : inputs) {
        value v(parser);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, v.read(input))
                << "'" << input << "' was accepted as '" << v.write() << "'";
    }
}

size_t read_size(const ucs_config_parser_t &parser, const char *str)
{
    value v(parser);
    EXPECT_EQ(UCS_OK, v.read(str)) << str;
    return v.as<size_t>();
}

double read_time(const char *str)
{
    value v(p_time);
    EXPECT_EQ(UCS_OK, v.read(str)) << str;
    return v.as<double>();
}

} // namespace


/* ---- bool, ternary, on/off ------------------------------------------- */

TEST(ucs_config, bool_accepts_yes_no_words_in_any_case)
{
    for (const char *yes : {"y", "yes", "on", "1", "Y", "YES", "On"}) {
        value v(p_bool);
        ASSERT_EQ(UCS_OK, v.read(yes)) << yes;
        EXPECT_EQ(1, v.as<int>()) << yes;
    }
    for (const char *no : {"n", "no", "off", "0", "N", "No", "OFF"}) {
        value v(p_bool);
        v.as<int>() = 1;
        ASSERT_EQ(UCS_OK, v.read(no)) << no;
        EXPECT_EQ(0, v.as<int>()) << no;
    }
}

TEST(ucs_config, bool_rejects_other_words_empty_and_spaces)
{
    expect_rejected(p_bool, {"", "2", "true", "false", "maybe", "yes ", " y",
                             "yess", "try", "auto"});
}

TEST(ucs_config, bool_writes_y_and_n)
{
    EXPECT_EQ("y", canonical(p_bool, "on"));
    EXPECT_EQ("n", canonical(p_bool, "0"));
}

TEST(ucs_config, ternary_accepts_try_and_auto_only_where_declared)
{
    value v(p_ternary);
    ASSERT_EQ(UCS_OK, v.read("try"));
    EXPECT_EQ(UCS_TRY, v.as<int>());
    ASSERT_EQ(UCS_OK, v.read("yes"));
    EXPECT_EQ(UCS_YES, v.as<int>());
    ASSERT_EQ(UCS_OK, v.read("n"));
    EXPECT_EQ(UCS_NO, v.as<int>());
    expect_rejected(p_ternary, {"auto", "", "tryy", "maybe"});

    value a(p_ternary_a);
    ASSERT_EQ(UCS_OK, a.read("AUTO"));
    EXPECT_EQ(UCS_AUTO, a.as<int>());
    EXPECT_EQ("auto", a.write());
    EXPECT_NE(std::string::npos, help(p_ternary_a).find("auto"));
    EXPECT_EQ(std::string::npos, help(p_ternary).find("auto"));
}

TEST(ucs_config, on_off_accepts_auto_only_where_declared)
{
    EXPECT_EQ("on", canonical(p_on_off, "on"));
    EXPECT_EQ("off", canonical(p_on_off, "no"));
    expect_rejected(p_on_off, {"auto", "", "onn", "try"});

    value a(p_on_off_a);
    ASSERT_EQ(UCS_OK, a.read("auto"));
    EXPECT_EQ(UCS_CONFIG_AUTO, a.as<int>());
    EXPECT_EQ("auto", a.write());
}


/* ---- integers and doubles -------------------------------------------- */

TEST(ucs_config, int_accepts_full_range_and_negative_numbers)
{
    value v(p_int);
    ASSERT_EQ(UCS_OK, v.read("-42"));
    EXPECT_EQ(-42, v.as<int>());
    ASSERT_EQ(UCS_OK, v.read("2147483647"));
    EXPECT_EQ(INT_MAX, v.as<int>());
    ASSERT_EQ(UCS_OK, v.read("-2147483648"));
    EXPECT_EQ(INT_MIN, v.as<int>());
    ASSERT_EQ(UCS_OK, v.read("010")); /* decimal, not octal */
    EXPECT_EQ(10, v.as<int>());
}

TEST(ucs_config, int_rejects_overflow_garbage_and_empty)
{
    expect_rejected(p_int, {"2147483648", "-2147483649", "", "-", "12a", " 1",
                            "1 ", "+1", "0x10", "1.5", "1e3",
                            "99999999999999999999999"});
}

TEST(ucs_config, uint_rejects_negative_and_overflow)
{
    expect_rejected(p_uint, {"-1", "4294967296", "", "inf", "auto", "1K",
                             "7x"});
    EXPECT_EQ("4294967295", canonical(p_uint, "4294967295"));
}

TEST(ucs_config, uint_accepts_inf_and_auto_where_declared)
{
    value v(p_uint_inf);
    ASSERT_EQ(UCS_OK, v.read("inf"));
    EXPECT_EQ(UCS_CONFIG_UINT_INF, v.as<unsigned>());
    EXPECT_EQ("inf", v.write());
    ASSERT_EQ(UCS_OK, v.read("auto"));
    EXPECT_EQ(UCS_CONFIG_UINT_AUTO, v.as<unsigned>());
    EXPECT_EQ("auto", v.write());
    ASSERT_EQ(UCS_OK, v.read("17"));
    EXPECT_EQ(17u, v.as<unsigned>());
    EXPECT_NE(std::string::npos, help(p_uint_inf).find("inf or auto"));
}

TEST(ucs_config, ulong_rejects_overflow_and_accepts_inf_where_declared)
{
    expect_rejected(p_ulong, {"18446744073709551616", "-5", "inf"});
    EXPECT_EQ("18446744073709551615",
              canonical(p_ulong, "18446744073709551615"));
    EXPECT_EQ("inf", canonical(p_ulong_inf, "INF"));
    expect_rejected(p_ulong_inf, {"auto"});
}

TEST(ucs_config, double_accepts_decimal_and_rejects_garbage)
{
    value v(p_double);
    ASSERT_EQ(UCS_OK, v.read("-2.5e-3"));
    EXPECT_DOUBLE_EQ(-2.5e-3, v.as<double>());
    EXPECT_EQ("0.1", canonical(p_double, "0.1"));
    expect_rejected(p_double, {"", "abc", "1.0x", "nan", "inf", "0x10",
                               " 1", "1e999", "1 ", "."});
}


/* ---- sizes ----------------------------------------------------------- */

TEST(ucs_config, size_accepts_binary_units)
{
    EXPECT_EQ(512u, read_size(p_size, "512"));
    EXPECT_EQ(512u, read_size(p_size, "512b"));
    EXPECT_EQ(512u * 1024, read_size(p_size, "512K"));
    EXPECT_EQ(4096u, read_size(p_size, "4kb"));
    EXPECT_EQ(4ul << 20, read_size(p_size, "4M"));
    EXPECT_EQ(4ul << 20, read_size(p_size, "4MB"));
    EXPECT_EQ(1ul << 30, read_size(p_size, "1G"));
    EXPECT_EQ(3ul << 40, read_size(p_size, "3t"));
    EXPECT_EQ(0u, read_size(p_size, "0"));
}

TEST(ucs_config, size_accepts_fraction_of_whole_bytes)
{
    EXPECT_EQ(1572864u, read_size(p_size, "1.5M"));
    EXPECT_EQ(512u, read_size(p_size, "0.5K"));
    EXPECT_EQ(256u, read_size(p_size, ".25K"));
}

TEST(ucs_config, size_rejects_fraction_that_is_not_whole_bytes)
{
    expect_rejected(p_size, {"0.1K", "1.5", "1.3b", "1.", "."});
}

TEST(ucs_config, size_rejects_unknown_unit_and_trailing_garbage)
{
    expect_rejected(p_size, {"4X", "4Mx", "4 M", "4MiB", "4MM", "10 ms",
                             "4Kbb", "1e3", "0x10", "4M "});
}

TEST(ucs_config, size_rejects_overflow)
{
    expect_rejected(p_size, {"99999999999999999999K", "99999999999999999999",
                             "16777216T", "18446744073709551616",
                             "16384P"});
    EXPECT_EQ(SIZE_MAX, read_size(p_size, "18446744073709551615"));
}

TEST(ucs_config, size_rejects_negative_and_empty)
{
    expect_rejected(p_size, {"-1", "-1K", "", "K", "+1", " 1"});
}

TEST(ucs_config, size_accepts_inf_and_auto_only_where_declared)
{
    expect_rejected(p_size, {"inf", "auto"});
    EXPECT_EQ(UCS_MEMUNITS_INF, read_size(p_size_inf, "inf"));
    EXPECT_EQ(UCS_MEMUNITS_AUTO, read_size(p_size_inf, "auto"));
    EXPECT_EQ("inf", canonical(p_size_inf, "inf"));
    EXPECT_EQ("auto", canonical(p_size_inf, "Auto"));
}

TEST(ucs_config, size_writes_the_largest_exact_unit)
{
    EXPECT_EQ("1536K", canonical(p_size, "1.5M"));
    EXPECT_EQ("4M", canonical(p_size, "4096K"));
    EXPECT_EQ("1000", canonical(p_size, "1000"));
    EXPECT_EQ("0", canonical(p_size, "0"));
    EXPECT_EQ("2T", canonical(p_size, "2048G"));
}


/* ---- times ----------------------------------------------------------- */

TEST(ucs_config, time_accepts_units_and_stores_seconds)
{
    EXPECT_DOUBLE_EQ(1.8e-6, read_time("1.8us"));
    EXPECT_DOUBLE_EQ(0.01, read_time("10ms"));
    EXPECT_DOUBLE_EQ(2.0, read_time("2s"));
    EXPECT_DOUBLE_EQ(1e-7, read_time("100ns"));
    EXPECT_DOUBLE_EQ(3.0, read_time("3"));
    EXPECT_DOUBLE_EQ(0.0, read_time("0"));
}

TEST(ucs_config, time_rejects_unknown_unit_spaces_and_negative)
{
    expect_rejected(p_time, {"10m", "10 ms", "10msx", "5min", "1h", "-1s",
                             "", "s", "ms", "inf", "auto", "nan", "+1s",
                             "0x10s", " 1s", "1e999s", "10MS"});
}

TEST(ucs_config, time_accepts_inf_and_auto_where_declared)
{
    value v(p_time_inf);
    ASSERT_EQ(UCS_OK, v.read("inf"));
    EXPECT_TRUE(std::isinf(v.as<double>()));
    EXPECT_EQ("inf", v.write());
    ASSERT_EQ(UCS_OK, v.read("auto"));
    EXPECT_EQ(UCS_CONFIG_TIME_AUTO, v.as<double>());
    EXPECT_EQ("auto", v.write());
}

TEST(ucs_config, time_writes_a_readable_unit)
{
    EXPECT_EQ("10ms", canonical(p_time, "10ms"));
    EXPECT_EQ("1.8us", canonical(p_time, "1.8us"));
    EXPECT_EQ("2s", canonical(p_time, "2"));
    EXPECT_EQ("100ns", canonical(p_time, "100ns"));
    EXPECT_EQ("1.5s", canonical(p_time, "1500ms"));
    EXPECT_EQ("0s", canonical(p_time, "0ns"));
}

TEST(ucs_config, time_round_trips_awkward_values_exactly)
{
    for (double seconds : {1.0 / 3, 123.456e-9, 1e-12, 7e5, 0.1 + 0.2}) {
        value v(p_time), back(p_time);
        v.as<double>() = seconds;
        ASSERT_EQ(UCS_OK, back.read(v.write().c_str())) << v.write();
        EXPECT_EQ(seconds, back.as<double>()) << v.write();
    }
}


/* ---- strings and enums ----------------------------------------------- */

TEST(ucs_config, string_accepts_anything_and_clone_is_deep)
{
    value v(p_string);
    ASSERT_EQ(UCS_OK, v.read(""));
    EXPECT_EQ("", v.write());
    ASSERT_EQ(UCS_OK, v.read("a b=c,#d"));
    EXPECT_EQ("a b=c,#d", v.write());

    value copy(p_string);
    ASSERT_EQ(UCS_OK, p_string.clone(v.ptr(), copy.ptr(), &p_string));
    EXPECT_NE(v.as<char*>(), copy.as<char*>());
    EXPECT_STREQ(v.as<char*>(), copy.as<char*>());
}

TEST(ucs_config, enum_matches_names_ignoring_case)
{
    value v(p_color);
    ASSERT_EQ(UCS_OK, v.read("GREEN"));
    EXPECT_EQ(1u, v.as<unsigned>());
    EXPECT_EQ("green", v.write());
    expect_rejected(p_color, {"", "purple", "gree", "green,red", "1"});
    EXPECT_EQ("one of red,green,blue", help(p_color));
}

TEST(ucs_config, log_level_is_an_enum_over_log_level_names)
{
    value v(p_log_level);
    ASSERT_EQ(UCS_OK, v.read("debug"));
    EXPECT_EQ((unsigned)UCS_LOG_LEVEL_DEBUG, v.as<unsigned>());
    ASSERT_EQ(UCS_OK, v.read("poll"));
    EXPECT_EQ((unsigned)UCS_LOG_LEVEL_TRACE_POLL, v.as<unsigned>());
    expect_rejected(p_log_level, {"verbose", "", "print"});
    EXPECT_EQ("one of fatal,error,warn,diag,info,debug,trace,req,data,async,"
              "func,poll",
              help(p_log_level));
}


/* ---- lists ----------------------------------------------------------- */

TEST(ucs_config, bitmap_sets_one_bit_per_listed_name)
{
    value v(p_color_bits);
    ASSERT_EQ(UCS_OK, v.read("blue,red"));
    EXPECT_EQ(UCS_BIT(0) | UCS_BIT(2), v.as<uint64_t>());
    EXPECT_EQ("red,blue", v.write());
    ASSERT_EQ(UCS_OK, v.read("all"));
    EXPECT_EQ(UCS_MASK(3), v.as<uint64_t>());
    ASSERT_EQ(UCS_OK, v.read("none"));
    EXPECT_EQ(0u, v.as<uint64_t>());
    EXPECT_EQ("none", v.write());
    expect_rejected(p_color_bits, {"", "red,,blue", "purple", ",red", "red,",
                                   "red, blue"});
}

TEST(ucs_config, memtype_bitmap_maps_memory_type_names)
{
    value v(p_memtypes);
    ASSERT_EQ(UCS_OK, v.read("host,cuda"));
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_CUDA),
              v.as<uint64_t>());
    ASSERT_EQ(UCS_OK, v.read("cuda-managed"));
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED), v.as<uint64_t>());
    ASSERT_EQ(UCS_OK, v.read("all"));
    EXPECT_EQ(UCS_MASK(UCS_MEMORY_TYPE_LAST), v.as<uint64_t>());
    /* "unknown" and the names kept for newer upstream numbering are in
     * ucs_memory_type_names but are no selectable type */
    expect_rejected(p_memtypes, {"unknown", "ze-host", "ze-managed", "gpu", "host,", ""});
}

/* Callers built with upstream 1.15 .. 1.22 headers index the names with
 * their UNKNOWN (9 or 10) and their inserted types; every such index reads a
 * name, and the list still ends. */
TEST(ucs_config, memory_type_names_cover_newer_upstream_numbering)
{
    for (int i = UCS_MEMORY_TYPE_LAST; i <= 10; ++i) {
        ASSERT_NE(nullptr, ucs_memory_type_names[i]) << i;
        ASSERT_NE(nullptr, ucs_memory_type_descs[i]) << i;
    }
    EXPECT_STREQ("unknown", ucs_memory_type_names[5]);  /* 1.13's UNKNOWN */
    EXPECT_STREQ("unknown", ucs_memory_type_names[9]);  /* 1.19's UNKNOWN */
    EXPECT_STREQ("unknown", ucs_memory_type_names[10]); /* 1.21's UNKNOWN */
    EXPECT_EQ(nullptr, ucs_memory_type_names[11]);
}

TEST(ucs_config, string_array_splits_on_commas)
{
    value v(p_strings);
    ASSERT_EQ(UCS_OK, v.read("a,bb,c"));
    const ucs_config_names_array_t &array = v.as<ucs_config_names_array_t>();
    ASSERT_EQ(3u, array.count);
    EXPECT_STREQ("bb", array.names[1]);
    EXPECT_EQ("a,bb,c", v.write());

    ASSERT_EQ(UCS_OK, v.read(""));
    EXPECT_EQ(0u, v.as<ucs_config_names_array_t>().count);
    expect_rejected(p_strings, {"a,,b", ",a", "a,", "a, b", ","});
}

TEST(ucs_config, allow_list_reads_all_names_and_negation)
{
    value v(p_allow);
    ASSERT_EQ(UCS_OK, v.read("all"));
    EXPECT_EQ(UCS_CONFIG_ALLOW_LIST_ALLOW_ALL,
              v.as<ucs_config_allow_list_t>().mode);

    ASSERT_EQ(UCS_OK, v.read("tcp,shm"));
    EXPECT_EQ(UCS_CONFIG_ALLOW_LIST_ALLOW, v.as<ucs_config_allow_list_t>().mode);
    ASSERT_EQ(2u, v.as<ucs_config_allow_list_t>().array.count);
    EXPECT_STREQ("shm", v.as<ucs_config_allow_list_t>().array.names[1]);

    ASSERT_EQ(UCS_OK, v.read("^cuda_ipc"));
    EXPECT_EQ(UCS_CONFIG_ALLOW_LIST_NEGATE,
              v.as<ucs_config_allow_list_t>().mode);
    ASSERT_EQ(1u, v.as<ucs_config_allow_list_t>().array.count);
    EXPECT_STREQ("cuda_ipc", v.as<ucs_config_allow_list_t>().array.names[0]);
    EXPECT_EQ("^cuda_ipc", v.write());
}

TEST(ucs_config, allow_list_rejects_empty_and_misplaced_all)
{
    expect_rejected(p_allow, {"", "^", "tcp,all", "^all", ",tcp", "tcp,,shm",
                              "^,tcp", "tcp shm"});
}

TEST(ucs_config, memtype_map_sets_listed_types_and_keeps_others)
{
    value v(p_memtype_map);
    ASSERT_EQ(UCS_OK, v.read("1M"));
    ASSERT_EQ(UCS_OK, v.read("host:512K,cuda:4M"));
    const size_t *map = &v.as<size_t>();
    EXPECT_EQ(512u * 1024, map[UCS_MEMORY_TYPE_HOST]);
    EXPECT_EQ(4u << 20, map[UCS_MEMORY_TYPE_CUDA]);
    EXPECT_EQ(1u << 20, map[UCS_MEMORY_TYPE_CUDA_MANAGED]);
    EXPECT_EQ(1u << 20, map[UCS_MEMORY_TYPE_ROCM]);
    EXPECT_EQ("host:512K,cuda:4M,cuda-managed:1M,rocm:1M,rocm-managed:1M",
              v.write());

    ASSERT_EQ(UCS_OK, v.read("CUDA:inf"));
    EXPECT_EQ(UCS_MEMUNITS_INF, map[UCS_MEMORY_TYPE_CUDA]);
}

TEST(ucs_config, memtype_map_rejects_unknown_type_and_bad_value)
{
    expect_rejected(p_memtype_map, {"gpu:1M", "host:", "host:abc", "",
                                    "host:1M,", "unknown:1M", ":1M",
                                    "host:1M,,cuda:2M", "host:-1"});
}

TEST(ucs_config, memtype_map_writes_one_value_when_all_types_agree)
{
    EXPECT_EQ("8K", canonical(p_memtype_map, "8192"));
}


/* ---- every parser ---------------------------------------------------- */

TEST(ucs_config, write_then_read_yields_the_same_value_for_every_parser)
{
    struct sample {
        const ucs_config_parser_t *parser;
        const char                *input;
    } samples[] = {
        {&p_string, "hello"},          {&p_string, ""},
        {&p_bool, "yes"},              {&p_bool, "off"},
        {&p_ternary, "try"},           {&p_ternary_a, "auto"},
        {&p_on_off, "on"},             {&p_on_off_a, "auto"},
        {&p_int, "-17"},               {&p_uint, "0"},
        {&p_uint_inf, "inf"},          {&p_uint_inf, "auto"},
        {&p_ulong, "123456789012"},    {&p_ulong_inf, "inf"},
        {&p_size, "1.5M"},             {&p_size, "12345"},
        {&p_size_inf, "inf"},          {&p_size_inf, "auto"},
        {&p_time, "1.8us"},            {&p_time, "0.3"},
        {&p_time_inf, "inf"},          {&p_double, "0.3"},
        {&p_double, "-1e-300"},        {&p_log_level, "trace"},
        {&p_double, "1e300"},          {&p_double, "12345.678"},
        {&p_color, "blue"},            {&p_color_bits, "green,red"},
        {&p_color_bits, "none"},       {&p_memtypes, "rocm,host"},
        {&p_strings, "x,y"},           {&p_strings, ""},
        {&p_allow, "all"},             {&p_allow, "a,b"},
        {&p_allow, "^a,b"},            {&p_memtype_map, "host:1K,rocm:inf"},
        {&p_memtype_map, "64K"},
    };

    for (const sample &s : samples) {
        value first(*s.parser), second(*s.parser);
        ASSERT_EQ(UCS_OK, first.read(s.input)) << s.input;
        std::string written = first.write();
        ASSERT_EQ(UCS_OK, second.read(written.c_str()))
                << s.input << " -> " << written;
        EXPECT_EQ(written, second.write()) << s.input;
        if (s.parser->release == NULL) {
            /* plain values: the bytes themselves must match */
            EXPECT_EQ(0, memcmp(first.ptr(), second.ptr(), s.parser->size))
                    << s.input << " -> " << written;
        }
    }
}

TEST(ucs_config, clone_and_release_are_deep_for_owning_parsers)
{
    for (const ucs_config_parser_t *parser : {&p_strings, &p_allow}) {
        value orig(*parser), copy(*parser);
        ASSERT_EQ(UCS_OK, orig.read("alpha,beta"));
        ASSERT_EQ(UCS_OK, parser->clone(orig.ptr(), copy.ptr(), parser));
        parser->release(orig.ptr(), parser); /* the copy must survive */
        EXPECT_EQ("alpha,beta", copy.write());
    }
}

TEST(ucs_config, every_parser_describes_its_accepted_forms)
{
    for (const ucs_config_parser_t *parser :
         {&p_string, &p_bool, &p_ternary, &p_on_off, &p_int, &p_uint,
          &p_ulong, &p_size, &p_time, &p_double, &p_log_level, &p_color_bits,
          &p_memtypes, &p_strings, &p_allow, &p_memtype_map}) {
        std::string text = help(*parser);
        EXPECT_GT(text.size(), 5u) << text;
    }
    EXPECT_NE(std::string::npos, help(p_size).find("K,M,G,T"));
    EXPECT_NE(std::string::npos, help(p_time).find("ms"));
    EXPECT_NE(std::string::npos, help(p_memtype_map).find("cuda-managed"));
    EXPECT_NE(std::string::npos, help(p_memtype_map).find("K,M,G,T"));
}

TEST(ucs_config, write_truncates_like_snprintf)
{
    value v(p_allow);
    ASSERT_EQ(UCS_OK, v.read("^alpha,beta"));
    char buf[5];
    EXPECT_EQ(11u, p_allow.write(v.ptr(), buf, sizeof(buf), &p_allow));
    EXPECT_STREQ("^alp", buf);
}

TEST(ucs_config, edit_distance_counts_edits_ignoring_case)
{
    EXPECT_EQ(0u, ucs_config_edit_distance("UCX_TLS", "ucx_tls"));
    EXPECT_EQ(3u, ucs_config_edit_distance("", "abc"));
    EXPECT_EQ(3u, ucs_config_edit_distance("kitten", "sitting"));
    EXPECT_EQ(1u, ucs_config_edit_distance("UCX_LOG_LEVL", "UCX_LOG_LEVEL"));
    EXPECT_EQ(1u, ucs_config_edit_distance("UCX_LOG_LEVLE", "UCX_LOG_LEVEL"));
    EXPECT_EQ(1u, ucs_config_edit_distance("ab", "ba"));
    EXPECT_EQ(3u, ucs_config_edit_distance("UCX_TSL_X", "UCX_TLS"));
}
