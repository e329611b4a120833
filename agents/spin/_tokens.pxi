# The token readers of the compiled text passes (included by ``_textscan.pyx``, which
# defines ``_word_class``): re's Unicode classes and one reader per alternative the
# volatile-token mask and the figures of a result share. Each returns the end of its
# token at ``p``, or -1; where the regex could backtrack the comments say why only the
# longest choice can match.

from cpython.unicode cimport Py_UNICODE_ISDECIMAL, Py_UNICODE_ISSPACE


cdef inline Py_UCS4 _at(int kind, void* data, Py_ssize_t n, Py_ssize_t i) noexcept:
    """The character at ``i``, or 0 past either end (0 is in no class below)."""
    if i < 0 or i >= n:
        return 0
    return PyUnicode_READ(kind, data, i)


cdef inline bint _word(Py_UCS4 ch) noexcept:
    return ch != 0 and _word_class(ch) != 0


cdef inline bint _dec(Py_UCS4 ch) noexcept:
    if ch < 128:
        return 48 <= ch <= 57
    return Py_UNICODE_ISDECIMAL(ch)


cdef inline bint _hex(Py_UCS4 ch) noexcept:
    return (48 <= ch <= 57) or (97 <= ch <= 102) or (65 <= ch <= 70)


cdef inline bint _space(Py_UCS4 ch) noexcept:
    if ch == 0:
        return False
    if ch < 128:
        return ch == 32 or 9 <= ch <= 13 or 28 <= ch <= 31
    return Py_UNICODE_ISSPACE(ch)


cdef inline bint _boundary(int kind, void* data, Py_ssize_t n, Py_ssize_t i) noexcept:
    return _word(_at(kind, data, n, i - 1)) != _word(_at(kind, data, n, i))


cdef inline Py_ssize_t _digits(int kind, void* data, Py_ssize_t n, Py_ssize_t i) noexcept:
    """The end of the run of decimal digits starting at ``i``."""
    while _dec(_at(kind, data, n, i)):
        i += 1
    return i


cdef inline bint _all_dec(int kind, void* data, Py_ssize_t n, Py_ssize_t i, int count) noexcept:
    cdef int k
    for k in range(count):
        if not _dec(_at(kind, data, n, i + k)):
            return False
    return True


cdef inline bint _literal(int kind, void* data, Py_ssize_t n, Py_ssize_t i, str word):
    cdef Py_ssize_t k
    for k in range(len(word)):
        if _at(kind, data, n, i + k) != word[k]:
            return False
    return True


cdef Py_ssize_t _uuid(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    cdef Py_ssize_t k
    cdef Py_UCS4 ch
    for k in range(36):
        ch = _at(kind, data, n, p + k)
        if k == 8 or k == 13 or k == 18 or k == 23:
            if ch != u'-':
                return -1
        elif not _hex(ch):
            return -1
    return p + 36


cdef Py_ssize_t _iso_time(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # nothing follows the optional groups: each is taken whenever it matches
    cdef Py_ssize_t e
    cdef Py_UCS4 sep
    if not (_all_dec(kind, data, n, p, 4) and _at(kind, data, n, p + 4) == u'-'
            and _all_dec(kind, data, n, p + 5, 2) and _at(kind, data, n, p + 7) == u'-'
            and _all_dec(kind, data, n, p + 8, 2)):
        return -1
    sep = _at(kind, data, n, p + 10)
    if not ((sep == u'T' or sep == u' ') and _all_dec(kind, data, n, p + 11, 2)
            and _at(kind, data, n, p + 13) == u':' and _all_dec(kind, data, n, p + 14, 2)):
        return -1
    e = p + 16
    if _at(kind, data, n, e) == u':' and _all_dec(kind, data, n, e + 1, 2):
        e += 3
        if _at(kind, data, n, e) == u'.' and _dec(_at(kind, data, n, e + 1)):
            e = _digits(kind, data, n, e + 1)
    sep = _at(kind, data, n, e)
    if sep == u'Z':
        return e + 1
    if (sep == u'+' or sep == u'-') and _all_dec(kind, data, n, e + 1, 2):
        if _at(kind, data, n, e + 3) == u':' and _all_dec(kind, data, n, e + 4, 2):
            return e + 6
        if _all_dec(kind, data, n, e + 3, 2):
            return e + 5
    return e


cdef Py_ssize_t _clock(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # \d{1,2} may give back its second digit, but then ":" must be that digit: no match
    cdef Py_ssize_t e = p + 1
    if not _boundary(kind, data, n, p) or not _dec(_at(kind, data, n, p)):
        return -1
    if _dec(_at(kind, data, n, e)):
        e += 1
    if _at(kind, data, n, e) != u':' or not _all_dec(kind, data, n, e + 1, 2):
        return -1
    e += 3
    if (_at(kind, data, n, e) == u':' and _all_dec(kind, data, n, e + 1, 2)
            and _boundary(kind, data, n, e + 3)):
        return e + 3
    return e if _boundary(kind, data, n, e) else -1


cdef Py_ssize_t _temp_path(int kind, void* data, Py_ssize_t n, Py_ssize_t p):
    cdef Py_ssize_t e
    if _at(kind, data, n, p) != u'/':
        return -1  # before the prefixes are read one Python character at a time
    for prefix in ("/tmp/", "/var/folders/", "/private/var/"):
        if _literal(kind, data, n, p, prefix):
            e = p + len(prefix)
            if e >= n or _space(_at(kind, data, n, e)):
                continue
            while e < n and not _space(_at(kind, data, n, e)):
                e += 1
            return e
    return -1


cdef Py_ssize_t _address(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # a shorter hex run ends before a hex digit, a word character: no \b there
    cdef Py_ssize_t e = p + 2
    if not (_boundary(kind, data, n, p) and _at(kind, data, n, p) == u'0'
            and _at(kind, data, n, p + 1) == u'x' and _hex(_at(kind, data, n, e))):
        return -1
    while _hex(_at(kind, data, n, e)):
        e += 1
    return e if _boundary(kind, data, n, e) else -1


cdef Py_ssize_t _hex_id(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # only the whole run can end at \b; the look-ahead's digit is then inside the run
    cdef Py_ssize_t e = p
    cdef bint digit = False
    if not _boundary(kind, data, n, p):
        return -1
    while _hex(_at(kind, data, n, e)):
        digit = digit or _dec(_at(kind, data, n, e))
        e += 1
    if e - p < 7 or not digit or not _boundary(kind, data, n, e):
        return -1
    return e


cdef Py_ssize_t _number(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    """``\\d+(\\.\\d+)?`` at ``p`` (-1 without a digit there)."""
    cdef Py_ssize_t e
    if not _dec(_at(kind, data, n, p)):
        return -1
    e = _digits(kind, data, n, p)
    if _at(kind, data, n, e) == u'.' and _dec(_at(kind, data, n, e + 1)):
        e = _digits(kind, data, n, e + 1)
    return e
