# Prints "enum NAME" for every enumerator and "typedef NAME" for every typedef
# declared in comment-free C text (run the header through
# "cc -fpreprocessed -dD -E -P" first and drop the # lines). Good enough for
# our own public headers, which it is used on; POSIX awk only.

function first_ident(s) {
    return match(s, /[A-Za-z_][A-Za-z0-9_]*/) ? substr(s, RSTART, RLENGTH) : ""
}

function last_ident(s,    r) {
    r = ""
    while (match(s, /[A-Za-z_][A-Za-z0-9_]*/)) {
        r = substr(s, RSTART, RLENGTH)
        s = substr(s, RSTART + RLENGTH)
    }
    return r
}

# The text from position i up to the character that closes the current
# level: "}" (for an enum body) or ";" at depth 0 (for a typedef).
function scan(i, stop,    depth, c, body) {
    depth = 0
    body = ""
    for (; i <= length(text); i++) {
        c = substr(text, i, 1)
        if (c == "{" || c == "(") depth++
        if (c == "}" || c == ")") {
            if (depth == 0 && stop == "}") break
            depth--
        }
        if (c == ";" && depth == 0 && stop == ";") break
        body = body c
    }
    scan_end = i
    return body
}

{ text = text " " $0 }

END {
    # Enumerators: split each enum body on top-level commas.
    rest = text
    base = 0
    while (match(rest, /enum[ \t]*[A-Za-z0-9_]*[ \t]*\{/)) {
        body = scan(base + RSTART + RLENGTH, "}")
        depth = 0
        item = ""
        for (k = 1; k <= length(body) + 1; k++) {
            c = (k <= length(body)) ? substr(body, k, 1) : ","
            if (c == "(") depth++
            if (c == ")") depth--
            if (c == "," && depth == 0) {
                name = first_ident(item)
                if (name != "") print "enum " name
                item = ""
            } else {
                item = item c
            }
        }
        base = scan_end
        rest = substr(text, base + 1)
    }

    # Typedefs: the declared name is the one inside "(*NAME)" for function
    # pointers, otherwise the last identifier of the declaration.
    rest = text
    base = 0
    while (match(rest, /(^|[^A-Za-z0-9_])typedef[^A-Za-z0-9_]/)) {
        decl = scan(base + RSTART + RLENGTH, ";")
        # A struct/enum body: the name follows its closing brace.
        while (match(decl, /\}/)) {
            decl = substr(decl, RSTART + 1)
        }
        if (match(decl, /\(\*[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*\)/)) {
            print "typedef " first_ident(substr(decl, RSTART + 2))
        } else {
            print "typedef " last_ident(decl)
        }
        base = scan_end
        rest = substr(text, base + 1)
    }
}
