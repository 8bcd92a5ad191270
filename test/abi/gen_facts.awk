# Turns test/abi/abi_facts.list into a C++ program that prints one line per
# fact, "KEY<TAB>VALUE", when built against one set of UCX headers.
#
# usage: awk -v out=DIR [-v disabled=FILE] -f gen_facts.awk abi_facts.list
#   DIR/facts.cc  the program; every fact is one statement on its own line
#   DIR/keys.txt  "LINE<TAB>KEY" for each fact line of facts.cc
#   DIR/meta.txt  "xsize KEY" (sizeof of a field_mask struct), "known NAME
#                 REASON", "ignore NAME", "name IDENT" (every identifier the
#                 list mentions)
# Lines of facts.cc listed in FILE (one number a line) are replaced by a
# comment: those facts do not compile against this header set, i.e. they do
# not exist there. Line numbers stay the same, so FILE can grow round by round.
# POSIX awk only (Debian's default awk is mawk).

function emit(key, code) {
    if (key in seen) {
        return
    }
    seen[key] = 1
    line++
    if (line in off) {
        print "    /* absent: " key " */" > src
    } else {
        print "    " code > src
    }
    print line "\t" key > keys
}

function num(key, expr) {
    emit(key, "abi_num(\"" key "\", (long long)(" expr "));")
}

function str(key, expr) {
    emit(key, "abi_str(\"" key "\", " expr ");")
}

function names(text,    t) {
    t = text
    while (match(t, /[A-Za-z_][A-Za-z0-9_]*/)) {
        print "name " substr(t, RSTART, RLENGTH) > meta
        t = substr(t, RSTART + RLENGTH)
    }
}

function type_facts(t) {
    num("sizeof " t, "sizeof(" t ")")
    num("alignof " t, "alignof(" t ")")
    num("signed " t, "abi_signed<" t ">::value()")
    str("type " t, "typeid(" t ").name()")
}

function struct_facts(t, first, extensible,    i, f) {
    if (!(t in struct_seen)) {
        struct_seen[t] = 1
        num("sizeof " t, "sizeof(" t ")")
        num("alignof " t, "alignof(" t ")")
        str("type " t, "typeid(" t ").name()")
        if (extensible) {
            print "xsize sizeof " t > meta
        }
    }
    for (i = first; i <= NF; i++) {
        f = $i
        num("offsetof " t "." f, "offsetof(" t ", " f ")")
        num("sizeof " t "." f, "sizeof(((" t " *)0)->" f ")")
        str("type " t "." f, "typeid(decltype(((" t " *)0)->" f ")).name()")
    }
}

BEGIN {
    src  = out "/facts.cc"
    keys = out "/keys.txt"
    meta = out "/meta.txt"
    if (disabled != "") {
        while ((getline l < disabled) > 0) {
            off[l + 0] = 1
        }
        close(disabled)
    }
    n = split("#include <ucp/api/ucp.h>|" \
              "#include <ucs/debug/log_def.h>|" \
              "#include <ucm/api/ucm.h>|" \
              "#include <cstddef>|" \
              "#include <cstdio>|" \
              "#include <typeinfo>|" \
              "#include <type_traits>|" \
              "static void abi_num(const char *k, long long v) { std::printf(\"%s\\t%lld\\n\", k, v); }|" \
              "static void abi_str(const char *k, const char *v) { std::printf(\"%s\\t%s\\n\", k, v); }|" \
              "template <typename T, bool E = std::is_enum<T>::value> struct abi_signed {|" \
              "    static long long value() { return std::is_signed<T>::value; }|" \
              "};|" \
              "template <typename T> struct abi_signed<T, true> {|" \
              "    static long long value() { return std::is_signed<typename std::underlying_type<T>::type>::value; }|" \
              "};|" \
              "int main()|" \
              "{", pre, "|")
    for (i = 1; i <= n; i++) {
        print pre[i] > src
    }
    line = n
}

/^[ \t]*(#|$)/ { next }

$1 != "known" {
    names($0)
}
$1 == "known" {
    names($2)
}

$1 == "struct"  { struct_facts($2, 3, 0); next }
$1 == "xstruct" { struct_facts($2, 3, 1); next }
$1 == "type" {
    for (i = 2; i <= NF; i++) type_facts($i)
    next
}
$1 == "opaque" {
    for (i = 2; i <= NF; i++) str("type " $i "*", "typeid(" $i " *).name()")
    next
}
$1 == "value" {
    for (i = 2; i <= NF; i++) num("value " $i, $i)
    next
}
$1 == "func" {
    for (i = 2; i <= NF; i++) str("func " $i, "typeid(decltype(&" $i ")).name()")
    next
}
$1 == "known" {
    print "known " $2 " " substr($0, index($0, $2) + length($2) + 1) > meta
    next
}
$1 == "ignore" {
    for (i = 2; i <= NF; i++) print "ignore " $i > meta
    next
}
{
    print FILENAME ":" FNR ": unknown directive '" $1 "'" > "/dev/stderr"
    bad = 1
}

END {
    print "    return 0;" > src
    print "}" > src
    exit bad
}
