# Compares the facts printed against upstream's headers with those printed
# against ours and reports them by class. Exits 1 when a fact both sides have
# differs and no "known" entry explains it.
#
# usage: awk -f compare.awk meta.txt upstream.txt ours.txt
#   meta.txt      from gen_facts.awk ("xsize KEY", "known NAME REASON")
#   upstream.txt  "KEY<TAB>VALUE" lines; VALUE "<absent>" when the fact does
#   ours.txt      not exist in that header set
# POSIX awk only.

function known_reason(key,    name, base) {
    name = substr(key, index(key, " ") + 1)
    base = name
    sub(/[.*].*$/, "", base)
    if (name in known) return known[name]
    if (base in known) return known[base]
    return ""
}

function show(title, list, count) {
    if (count == 0) return
    printf "%s (%d):\n%s", title, count, list
}

FILENAME == ARGV[1] {
    if ($1 == "xsize") {
        xsize[substr($0, 7)] = 1
    } else if ($1 == "known") {
        known[$2] = substr($0, index($0, $2) + length($2) + 1)
    }
    next
}

FILENAME == ARGV[2] {
    split($0, kv, "\t")
    up[kv[1]] = kv[2]
    order[++n] = kv[1]
    next
}

{
    split($0, kv, "\t")
    ours[kv[1]] = kv[2]
}

END {
    for (i = 1; i <= n; i++) {
        k = order[i]
        u = up[k]
        o = (k in ours) ? ours[k] : "<absent>"
        if (u == "<absent>" && o == "<absent>") {
            neither++
            l_neither = l_neither "  " k "\n"
        } else if (u == "<absent>") {
            only_ours++
            l_ours = l_ours "  " k " = " o "\n"
        } else if (o == "<absent>") {
            only_up++
            l_up = l_up "  " k " = " u "\n"
        } else if (u == o) {
            equal++
        } else if ((r = known_reason(k)) != "") {
            kd++
            l_known = l_known "  " k ": upstream " u ", ours " o " -- " r "\n"
        } else if (k in xsize) {
            grown++
            l_grown = l_grown "  " k ": upstream " u ", ours " o "\n"
        } else {
            bad++
            l_bad = l_bad "  " k ": upstream " u ", ours " o "\n"
        }
    }
    show("only in upstream's headers (not declared by us)", l_up, only_up)
    show("only in our headers", l_ours, only_ours)
    show("in neither (listed for other upstream versions)", l_neither, neither)
    show("known differences", l_known, kd)
    show("field_mask structs of different size (fields appended on one side)",
         l_grown, grown)
    show("MISMATCHES", l_bad, bad)
    printf "abi: %d facts: %d equal, %d mismatched, %d known differences, " \
           "%d size-only (appended fields), %d only upstream, %d only ours, " \
           "%d in neither\n", n, equal, bad, kd, grown, only_up, only_ours,
           neither
    exit (bad > 0)
}
