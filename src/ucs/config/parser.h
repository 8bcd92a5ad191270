/**
 * @file parser.h
 * The UCX_* configuration engine.
 *
 * A component describes its options as data: a table of fields, each with a
 * name (without the "UCX_" prefix), a default value string, a one-line doc,
 * the offset of the field in the component's options structure and a parser
 * (ucs_config_parser_t) that turns strings into values and back. The engine
 * fills such a structure from, lowest to highest precedence:
 *
 *   1. the table default;
 *   2. the configuration file: UCX_<NAME>, then, for a caller that gives an
 *      environment prefix P, UCX_<P>_<NAME>;
 *   3. the environment: UCX_<NAME>;
 *   4. the environment: UCX_<P>_<NAME>.
 *
 * Each layer is parsed and validated on top of the one below, so a merging
 * type (the memory-type map) keeps what a lower layer set for types a higher
 * layer does not name.
 *
 * The configuration file holds "UCX_NAME=value" lines, '#' comments and
 * blank lines (details in config_file.h). It is the file the caller names,
 * else the one $UCX_CONFIG_FILE names; by default there is none (a build may
 * define UCS_CONFIG_DEFAULT_FILE to read one when it exists).
 *
 * Every value is validated; a bad one fails the whole read with
 * UCS_ERR_INVALID_PARAM and an error message naming the variable, the value
 * and the accepted forms. Nothing falls back to a default silently.
 *
 * Tables register themselves in a process-wide registry when their library
 * is loaded (UCS_CONFIG_REGISTER_TABLE). The registry is what `ucx_info -c`
 * prints and what unknown UCX_* variables are checked against.
 *
 * Thread safety: the registry is protected by a lock, so libraries and
 * modules may be loaded from any thread. Reading the environment is meant for
 * initialisation time: the engine does not guard against a concurrent
 * setenv(), which the C library itself does not make safe. Filling and
 * printing distinct option structures from several threads is safe, and the
 * once-per-process unknown-variable warning is issued once even when many
 * threads ask for it at the same time.
 */
#ifndef UCS_CONFIG_PARSER_H_
#define UCS_CONFIG_PARSER_H_

#include <ucs/config/types.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

BEGIN_C_DECLS

/** Prefix of every variable the engine reads. */
#define UCS_CONFIG_ENV_PREFIX      "UCX_"

/** Longest full variable name, e.g. "UCX_<env prefix>_<table prefix><NAME>". */
#define UCS_CONFIG_NAME_MAX        128

/** A parser accepts "inf" (stored as the type's *_INF value below). */
#define UCS_CONFIG_PARSE_INF       UCS_BIT(0)
/** A parser accepts "auto" (stored as the type's *_AUTO value below). */
#define UCS_CONFIG_PARSE_AUTO      UCS_BIT(1)

/* Values stored for "inf" and "auto" by the numeric parsers. A number equal
 * to one of them is printed back as the word. */
#define UCS_CONFIG_UINT_INF        UINT_MAX
#define UCS_CONFIG_UINT_AUTO       (UINT_MAX - 1)
#define UCS_ULUNITS_INF            ULONG_MAX
#define UCS_ULUNITS_AUTO           (ULONG_MAX - 1)
#define UCS_MEMUNITS_INF           SIZE_MAX
#define UCS_MEMUNITS_AUTO          (SIZE_MAX - 1)
#define UCS_CONFIG_TIME_INF        HUGE_VAL
#define UCS_CONFIG_TIME_AUTO       (-2.0)


typedef struct ucs_config_parser ucs_config_parser_t;

/**
 * How one type of value is read, written, copied and freed.
 *
 * A value lives in @a size bytes of an options structure. All-zero bytes are
 * always a valid, empty value (NULL string, empty list, 0), so a freshly
 * zeroed structure can be released at any time.
 */
struct ucs_config_parser {
    /**
     * Parse @a str into @a value. On entry @a value holds a valid value owned
     * by the callee (a copy of the current one, so that merging types such as
     * the memory-type map can update only what the string names). On success
     * the new value replaces it, freeing whatever it no longer uses; on
     * failure @a value must still be a valid value.
     * @return UCS_OK, UCS_ERR_INVALID_PARAM, UCS_ERR_NO_MEMORY.
     */
    ucs_status_t (*read)(const char *str, void *value,
                         const ucs_config_parser_t *parser);

    /**
     * Write the canonical string of @a value, snprintf-style: at most @a max
     * bytes including the terminating NUL, @a buf may be NULL when @a max is
     * 0. Reading the string back yields the same value.
     * @return the length of the full string, excluding the NUL.
     */
    size_t (*write)(const void *value, char *buf, size_t max,
                    const ucs_config_parser_t *parser);

    /** Accepted forms for errors and docs ("one of a,b,c"), snprintf-style. */
    size_t (*help)(char *buf, size_t max, const ucs_config_parser_t *parser);

    /** Deep copy into uninitialised @a dst; NULL means a plain memcpy. */
    ucs_status_t (*clone)(const void *src, void *dst,
                          const ucs_config_parser_t *parser);

    /** Free what @a value owns, leaving it zeroed; NULL when it owns nothing. */
    void (*release)(void *value, const ucs_config_parser_t *parser);

    const void *arg;   /**< type-specific: name list, element parser, ... */
    size_t     size;   /**< bytes of the value in the options structure */
    unsigned   flags;  /**< UCS_CONFIG_PARSE_* */
};


/** A field flag: printed only with UCS_CONFIG_PRINT_HIDDEN. */
#define UCS_CONFIG_FIELD_HIDDEN    UCS_BIT(0)

/**
 * One option of a table. Tables are arrays terminated by an entry whose
 * @a name is NULL.
 */
typedef struct ucs_config_field {
    const char          *name;      /**< without prefixes, e.g. "LOG_LEVEL" */
    const char          *dfl_value; /**< default, as a string the parser reads */
    const char          *doc;       /**< one line (may contain '\n') */
    size_t              offset;     /**< of the value in the options structure */
    ucs_config_parser_t parser;     /**< UCS_CONFIG_TYPE_* */
    unsigned            flags;      /**< UCS_CONFIG_FIELD_* */
} ucs_config_field_t;


/**
 * A table with the facts the engine needs to fill and print it.
 * Declared by the owning component as a static object.
 */
typedef struct ucs_config_table_entry {
    const char                    *name;   /**< title, e.g. "UCP context" */
    const char                    *prefix; /**< prepended to each field name,
                                                "" or e.g. "CUDA_IPC_" */
    const ucs_config_field_t      *fields; /**< NULL-terminated */
    size_t                        size;    /**< of the options structure */
    struct ucs_config_table_entry *next;   /**< registry link, engine-owned */
} ucs_config_table_entry_t;


/*
 * Parser declarations for tables. Storage type of the field in brackets.
 */
#define UCS_CONFIG_PARSER_INIT(_kind, _clone, _release, _arg, _size, _flags) \
    {ucs_config_read_##_kind, ucs_config_write_##_kind, \
     ucs_config_help_##_kind, _clone, _release, _arg, _size, _flags}

/** [char*] any string, "" included. */
#define UCS_CONFIG_TYPE_STRING \
    UCS_CONFIG_PARSER_INIT(string, ucs_config_clone_string, \
                           ucs_config_release_string, NULL, sizeof(char*), 0)
/** [int] y/n, yes/no, on/off, 1/0 -> 1/0. */
#define UCS_CONFIG_TYPE_BOOL \
    UCS_CONFIG_PARSER_INIT(bool, NULL, NULL, NULL, sizeof(int), 0)
/** [int, ucs_ternary_auto_value_t] y/n/try. */
#define UCS_CONFIG_TYPE_TERNARY \
    UCS_CONFIG_PARSER_INIT(ternary, NULL, NULL, NULL, sizeof(int), 0)
/** [int, ucs_ternary_auto_value_t] y/n/try/auto. */
#define UCS_CONFIG_TYPE_TERNARY_AUTO \
    UCS_CONFIG_PARSER_INIT(ternary, NULL, NULL, NULL, sizeof(int), \
                           UCS_CONFIG_PARSE_AUTO)
/** [int, ucs_on_off_auto_value_t] on/off. */
#define UCS_CONFIG_TYPE_ON_OFF \
    UCS_CONFIG_PARSER_INIT(on_off, NULL, NULL, NULL, sizeof(int), 0)
/** [int, ucs_on_off_auto_value_t] on/off/auto. */
#define UCS_CONFIG_TYPE_ON_OFF_AUTO \
    UCS_CONFIG_PARSER_INIT(on_off, NULL, NULL, NULL, sizeof(int), \
                           UCS_CONFIG_PARSE_AUTO)
/** [int] a decimal integer, optionally negative. */
#define UCS_CONFIG_TYPE_INT \
    UCS_CONFIG_PARSER_INIT(int, NULL, NULL, NULL, sizeof(int), 0)
/** [unsigned] a decimal integer; _flags: UCS_CONFIG_PARSE_INF/AUTO or 0. */
#define UCS_CONFIG_TYPE_UINT_EX(_flags) \
    UCS_CONFIG_PARSER_INIT(uint, NULL, NULL, NULL, sizeof(unsigned), _flags)
#define UCS_CONFIG_TYPE_UINT       UCS_CONFIG_TYPE_UINT_EX(0)
/** [unsigned long] a decimal integer; _flags: UCS_CONFIG_PARSE_INF/AUTO. */
#define UCS_CONFIG_TYPE_ULONG_EX(_flags) \
    UCS_CONFIG_PARSER_INIT(ulong, NULL, NULL, NULL, sizeof(unsigned long), \
                           _flags)
#define UCS_CONFIG_TYPE_ULONG      UCS_CONFIG_TYPE_ULONG_EX(0)
/**
 * [size_t] bytes with an optional binary unit b, K, M, G, T (K = 1024; "KB"
 * reads as "K"): 512, 64K, 1.5M, 2G. A fraction must come to whole bytes:
 * "1.5M" is accepted, "0.1K" is an error rather than rounded. No sign, no
 * spaces; overflow of size_t is an error. _flags: UCS_CONFIG_PARSE_INF/AUTO.
 */
#define UCS_CONFIG_TYPE_SIZE_EX(_flags) \
    UCS_CONFIG_PARSER_INIT(size, NULL, NULL, NULL, sizeof(size_t), _flags)
#define UCS_CONFIG_TYPE_SIZE       UCS_CONFIG_TYPE_SIZE_EX(0)
/**
 * [double, seconds] a time with a unit s, ms, us, ns: 2s, 10ms, 1.8us,
 * 100ns; a bare number is seconds. No sign and no space before the unit
 * ("10 ms" is an error). _flags: UCS_CONFIG_PARSE_INF/AUTO.
 */
#define UCS_CONFIG_TYPE_TIME_EX(_flags) \
    UCS_CONFIG_PARSER_INIT(time, NULL, NULL, NULL, sizeof(double), _flags)
#define UCS_CONFIG_TYPE_TIME       UCS_CONFIG_TYPE_TIME_EX(0)
/** [double] a finite decimal number. */
#define UCS_CONFIG_TYPE_DOUBLE \
    UCS_CONFIG_PARSER_INIT(double, NULL, NULL, NULL, sizeof(double), 0)
/** [unsigned, or an enum] one of the NULL-terminated names @a _names. */
#define UCS_CONFIG_TYPE_ENUM(_names) \
    UCS_CONFIG_PARSER_INIT(enum, NULL, NULL, _names, sizeof(unsigned), 0)
/** [unsigned, ucs_log_level_t] a level name: fatal .. poll. */
#define UCS_CONFIG_TYPE_LOG_LEVEL  UCS_CONFIG_TYPE_ENUM(ucs_log_level_names)
/** [uint64_t] "a,b" -> bit mask over the NULL-terminated @a _names
 *  (at most 64); also "all" and "none". */
#define UCS_CONFIG_TYPE_BITMAP(_names) \
    UCS_CONFIG_PARSER_INIT(bitmap, NULL, NULL, _names, sizeof(uint64_t), 0)
/** [uint64_t] a set of memory types, e.g. "host,cuda" (bit i = type i). */
#define UCS_CONFIG_TYPE_MEMTYPE_BITMAP \
    UCS_CONFIG_PARSER_INIT(memtype_bitmap, NULL, NULL, NULL, \
                           sizeof(uint64_t), 0)
/** [ucs_config_names_array_t] "a,b,c", or "" for an empty list. */
#define UCS_CONFIG_TYPE_STRING_ARRAY \
    UCS_CONFIG_PARSER_INIT(string_array, ucs_config_clone_string_array, \
                           ucs_config_release_string_array, NULL, \
                           sizeof(ucs_config_names_array_t), 0)
/** [ucs_config_allow_list_t] "all", "a,b" or "^a,b". */
#define UCS_CONFIG_TYPE_ALLOW_LIST \
    UCS_CONFIG_PARSER_INIT(allow_list, ucs_config_clone_allow_list, \
                           ucs_config_release_allow_list, NULL, \
                           sizeof(ucs_config_allow_list_t), 0)
/**
 * [element type[UCS_MEMORY_TYPE_LAST]] one value per memory type:
 * "host:512K,cuda:4M" sets the listed types and keeps the others; a value
 * without a type ("1M") sets every type. @a _elem points to a static
 * ucs_config_parser_t for the element, @a _elem_size is its size.
 */
#define UCS_CONFIG_TYPE_MEMTYPE_MAP(_elem, _elem_size) \
    UCS_CONFIG_PARSER_INIT(memtype_map, ucs_config_clone_memtype_map, \
                           ucs_config_release_memtype_map, _elem, \
                           (_elem_size) * UCS_MEMORY_TYPE_LAST, 0)
/** [size_t[UCS_MEMORY_TYPE_LAST]] a size per memory type. */
#define UCS_CONFIG_TYPE_MEMTYPE_SIZE_MAP \
    UCS_CONFIG_TYPE_MEMTYPE_MAP(&ucs_config_memtype_size_elem, sizeof(size_t))

/** Element parser of UCS_CONFIG_TYPE_MEMTYPE_SIZE_MAP (a size, also "inf"). */
extern const ucs_config_parser_t ucs_config_memtype_size_elem;


/*
 * Parser functions referenced by the UCS_CONFIG_TYPE_* initialisers. They
 * follow the contracts of ucs_config_parser_t and are called through it.
 */
#define UCS_CONFIG_DECLARE_PARSER(_kind) \
    ucs_status_t ucs_config_read_##_kind(const char *str, void *value, \
                                         const ucs_config_parser_t *parser); \
    size_t ucs_config_write_##_kind(const void *value, char *buf, size_t max, \
                                    const ucs_config_parser_t *parser); \
    size_t ucs_config_help_##_kind(char *buf, size_t max, \
                                   const ucs_config_parser_t *parser)

UCS_CONFIG_DECLARE_PARSER(string);
UCS_CONFIG_DECLARE_PARSER(bool);
UCS_CONFIG_DECLARE_PARSER(ternary);
UCS_CONFIG_DECLARE_PARSER(on_off);
UCS_CONFIG_DECLARE_PARSER(int);
UCS_CONFIG_DECLARE_PARSER(uint);
UCS_CONFIG_DECLARE_PARSER(ulong);
UCS_CONFIG_DECLARE_PARSER(size);
UCS_CONFIG_DECLARE_PARSER(time);
UCS_CONFIG_DECLARE_PARSER(double);
UCS_CONFIG_DECLARE_PARSER(enum);
UCS_CONFIG_DECLARE_PARSER(bitmap);
UCS_CONFIG_DECLARE_PARSER(memtype_bitmap);
UCS_CONFIG_DECLARE_PARSER(string_array);
UCS_CONFIG_DECLARE_PARSER(allow_list);
UCS_CONFIG_DECLARE_PARSER(memtype_map);

ucs_status_t ucs_config_clone_string(const void *src, void *dst,
                                     const ucs_config_parser_t *parser);
void ucs_config_release_string(void *value, const ucs_config_parser_t *parser);
ucs_status_t ucs_config_clone_string_array(const void *src, void *dst,
                                           const ucs_config_parser_t *parser);
void ucs_config_release_string_array(void *value,
                                     const ucs_config_parser_t *parser);
/**
 * Whether @a list admits a name, given whether the name is @a listed in
 * list->array (the caller decides what "listed" means: exact names, aliases).
 * "all" admits every name, "^a,b" those not listed, "a,b" those listed.
 */
static inline int ucs_config_allow_list_admits(const ucs_config_allow_list_t *list,
                                               int listed)
{
    return (list->mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL) ||
           ((list->mode == UCS_CONFIG_ALLOW_LIST_NEGATE) ? !listed : listed);
}

ucs_status_t ucs_config_clone_allow_list(const void *src, void *dst,
                                         const ucs_config_parser_t *parser);
void ucs_config_release_allow_list(void *value,
                                   const ucs_config_parser_t *parser);
ucs_status_t ucs_config_clone_memtype_map(const void *src, void *dst,
                                          const ucs_config_parser_t *parser);
void ucs_config_release_memtype_map(void *value,
                                    const ucs_config_parser_t *parser);


/*
 * Registry.
 */

/**
 * Make a table known to `ucx_info -c` and to the unknown-variable check.
 * Registering an entry twice is harmless. Thread safe.
 *
 * @param entry  must stay valid until ucs_config_unregister_table().
 */
void ucs_config_register_table(ucs_config_table_entry_t *entry);

/** Undo ucs_config_register_table(); unknown entries are ignored. Thread safe. */
void ucs_config_unregister_table(ucs_config_table_entry_t *entry);

/**
 * Register @a _entry when the library or module that defines it is loaded,
 * and unregister it when it is unloaded. Use once per entry, at file scope.
 */
#define UCS_CONFIG_REGISTER_TABLE(_entry) \
    static void UCS_F_CTOR UCS_PP_CONCAT(_entry, _config_register)(void) \
    { \
        ucs_config_register_table(&(_entry)); \
    } \
    static void UCS_F_DTOR UCS_PP_CONCAT(_entry, _config_unregister)(void) \
    { \
        ucs_config_unregister_table(&(_entry)); \
    }


/*
 * Filling, changing and printing option structures.
 */

/**
 * Fill @a opts (entry->size bytes, zeroed first) from the table defaults, a
 * configuration file and the environment, in that order of precedence.
 *
 * @param opts        options structure to fill; on success the caller owns
 *                    it and frees it with ucs_config_parser_release_opts().
 * @param entry       table to fill from.
 * @param env_prefix  optional: also read UCX_<env_prefix>_<NAME>, which wins
 *                    over UCX_<NAME>. A trailing '_' is ignored. NULL or ""
 *                    for none.
 * @param filename    configuration file to read; NULL for the default one
 *                    (see ucs_config_file_default_path()).
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a bad value, a malformed file
 *         line or a bad env_prefix (an error is logged naming it);
 *         UCS_ERR_IO_ERROR when a named file cannot be read;
 *         UCS_ERR_NO_MEMORY. On error @a opts holds nothing to release.
 */
ucs_status_t ucs_config_parser_fill_opts(void *opts,
                                         const ucs_config_table_entry_t *entry,
                                         const char *env_prefix,
                                         const char *filename);

/**
 * Fill @a opts from the table defaults only (no file, no environment).
 * @return UCS_OK, UCS_ERR_NO_MEMORY, or UCS_ERR_INVALID_PARAM when a default
 *         of the table does not parse (a bug in the table).
 */
ucs_status_t
ucs_config_parser_fill_defaults(void *opts,
                                const ucs_config_table_entry_t *entry);

/**
 * Set one value, as if UCX_<name>=<value> were set.
 *
 * @param name   the table prefix and field name, e.g. "TLS" or
 *               "CUDA_IPC_CACHE" (no "UCX_").
 * @return UCS_OK; UCS_ERR_NO_ELEM when the table has no such field;
 *         UCS_ERR_INVALID_PARAM for a bad value, in which case the old value
 *         is kept and an error is logged; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucs_config_parser_set_value(void *opts,
                                         const ucs_config_table_entry_t *entry,
                                         const char *name, const char *value);

/**
 * Write the canonical string of one value into @a buf (at most @a max bytes
 * with the NUL; truncated when longer).
 * @return UCS_OK or UCS_ERR_NO_ELEM when the table has no such field.
 */
ucs_status_t ucs_config_parser_get_value(const void *opts,
                                         const ucs_config_table_entry_t *entry,
                                         const char *name, char *buf,
                                         size_t max);

/**
 * Deep-copy @a src into @a dst (entry->size bytes, uninitialised).
 * @return UCS_OK or UCS_ERR_NO_MEMORY (then @a dst holds nothing).
 */
ucs_status_t ucs_config_parser_clone_opts(const void *src, void *dst,
                                          const ucs_config_table_entry_t *entry);

/** Free what the fields of @a opts own and zero them. */
void ucs_config_parser_release_opts(void *opts,
                                    const ucs_config_table_entry_t *entry);

/**
 * Print @a opts as lines of a configuration file ("UCX_NAME=value").
 *
 * @param stream  output.
 * @param title   header text (with UCS_CONFIG_PRINT_HEADER); NULL for the
 *                table name.
 * @param opts    a filled options structure.
 * @param entry   its table.
 * @param flags   ucs_config_print_flags_t: CONFIG for the value lines, HEADER
 *                for a title, DOC for the doc, syntax and default of each
 *                field as '#' comments, HIDDEN for hidden fields too,
 *                COMMENT_DEFAULT to comment out lines whose value is the
 *                default.
 */
void ucs_config_parser_print_opts(FILE *stream, const char *title,
                                  const void *opts,
                                  const ucs_config_table_entry_t *entry,
                                  int flags);

/**
 * Print the current value of every registered table (read from the defaults,
 * the configuration file and the environment) as ucs_config_parser_print_opts()
 * does. The output can be used as a configuration file.
 *
 * @param prefix  "UCX", or "UCX_<P>" to read values as a program that uses
 *                environment prefix P sees them (names are printed without P).
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a bad value (logged) or a prefix
 *         that does not start with "UCX"; UCS_ERR_IO_ERROR, UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucs_config_parser_print_all_opts(FILE *stream, const char *prefix,
                                              int flags);


/*
 * Unknown variables.
 */

/**
 * Warn, at warning level, about every UCX_* environment variable that no
 * registered table knows, each with the closest known name. Names of the
 * form UCX_<P>_<NAME> are known when P is @a env_prefix or a prefix an
 * earlier fill used. Not rate limited; most callers want the _once flavour.
 *
 * @return the number of variables warned about.
 */
unsigned ucs_config_parser_warn_unknown_env_vars(const char *env_prefix);

/**
 * As ucs_config_parser_warn_unknown_env_vars(), for the keys of a
 * configuration file ("file:line: UCX_X is not a known variable; ...").
 *
 * @param filename    file to check; NULL for the default file.
 * @param env_prefix  as for ucs_config_parser_warn_unknown_env_vars().
 * @return the number of keys warned about (0 when there is no file or it
 *         cannot be read: reading it reports that).
 */
unsigned ucs_config_parser_warn_unknown_file_keys(const char *filename,
                                                  const char *env_prefix);

/**
 * The first call in the process checks the environment and the default
 * configuration file for unknown UCX_* names and warns about them; later
 * calls do nothing. Thread safe: concurrent first callers warn once.
 *
 * Call it after every library whose tables could name the variables has
 * been loaded, since a table registered later cannot withdraw a warning.
 */
void ucs_config_parser_warn_unknown_vars_once(const char *env_prefix);

/**
 * Whether @a var_name (e.g. "UCX_LOG_LEVEL") is a field of a registered
 * table, UCX_CONFIG_FILE, or such a name behind a known environment prefix.
 */
int ucs_config_parser_is_known_var(const char *var_name,
                                   const char *env_prefix);

/**
 * Edit distance between @a a and @a b, ignoring case: the number of
 * single-character insertions, deletions, substitutions and swaps of two
 * adjacent characters that turn one into the other.
 */
unsigned ucs_config_edit_distance(const char *a, const char *b);

END_C_DECLS

#endif
