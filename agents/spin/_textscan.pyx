# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled word scan of :mod:`loopwarden.agents.spin.textscan` (its pure-Python
twin there gives the same outputs; ``tests/unit/test_textscan.py`` checks both on
every text of the real runs and on random Unicode).

A word is a maximal run of ``re``'s Unicode ``\\w`` (``Py_UNICODE_ISALNUM`` or ``_``)
whose first character is alphanumeric, as ``\\w+`` plus ``token[0].isalnum()`` find
it; its hash is zlib's CRC-32 of its UTF-8 bytes, computed while the run is read.
"""

from cpython.unicode cimport (
    Py_UNICODE_ISALNUM,
    PyUnicode_DATA,
    PyUnicode_KIND,
    PyUnicode_READ,
)
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, malloc, qsort, realloc

cdef uint32_t CRC_TABLE[256]
cdef unsigned char ASCII_CLASS[128]  # 0: not \\w, 1: '_', 2: a letter or digit


cdef void _fill_table() noexcept:
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = n
        for k in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        CRC_TABLE[n] = c
    for n in range(128):
        ASCII_CLASS[n] = 2 if Py_UNICODE_ISALNUM(<Py_UCS4>n) else (1 if n == 95 else 0)


cdef inline int _word_class(Py_UCS4 ch) noexcept:
    """0: not a word character, 1: ``_``, 2: alphanumeric (``Py_UNICODE_ISALNUM``)."""
    if ch < 128:
        return ASCII_CLASS[ch]
    return 2 if Py_UNICODE_ISALNUM(ch) else 0


_fill_table()


cdef inline uint32_t _crc_byte(uint32_t crc, uint32_t byte) noexcept nogil:
    return CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)


cdef inline uint32_t _crc_char(uint32_t crc, uint32_t ch) noexcept nogil:
    """``crc`` continued over ``ch``'s UTF-8 bytes (a word holds no surrogate)."""
    if ch < 0x80:
        return _crc_byte(crc, ch)
    if ch < 0x800:
        crc = _crc_byte(crc, 0xC0 | (ch >> 6))
        return _crc_byte(crc, 0x80 | (ch & 0x3F))
    if ch < 0x10000:
        crc = _crc_byte(crc, 0xE0 | (ch >> 12))
        crc = _crc_byte(crc, 0x80 | ((ch >> 6) & 0x3F))
        return _crc_byte(crc, 0x80 | (ch & 0x3F))
    crc = _crc_byte(crc, 0xF0 | (ch >> 18))
    crc = _crc_byte(crc, 0x80 | ((ch >> 12) & 0x3F))
    crc = _crc_byte(crc, 0x80 | ((ch >> 6) & 0x3F))
    return _crc_byte(crc, 0x80 | (ch & 0x3F))


cdef int _ascending(const void* a, const void* b) noexcept nogil:
    cdef uint32_t x = (<const uint32_t*>a)[0]
    cdef uint32_t y = (<const uint32_t*>b)[0]
    return (x > y) - (x < y)


def scan(str text, Py_ssize_t limit):
    """``(words, hashes)``: how many words ``text`` holds, and the ``limit`` smallest
    distinct CRC-32s of their UTF-8 bytes, ascending."""
    cdef Py_ssize_t n = len(text), i = 0, words = 0, kept = 0, capacity = 64, j
    cdef Py_UCS4 ch
    cdef uint32_t crc
    cdef bint in_run = False, counted = False
    cdef int kind = PyUnicode_KIND(text), cls
    cdef void* data = PyUnicode_DATA(text)
    cdef uint32_t* hashes = <uint32_t*>malloc(capacity * sizeof(uint32_t))
    cdef uint32_t* grown
    if hashes == NULL:
        raise MemoryError()
    try:
        for i in range(n + 1):
            if i < n:
                ch = PyUnicode_READ(kind, data, i)
                cls = _word_class(ch)
                if cls:
                    if not in_run:
                        in_run = True
                        counted = cls == 2
                        crc = 0xFFFFFFFF
                    if counted:
                        crc = _crc_char(crc, <uint32_t>ch)
                    continue
            if in_run:  # the run ended (or the text did)
                in_run = False
                if counted:
                    words += 1
                    if kept == capacity:
                        capacity *= 2
                        grown = <uint32_t*>realloc(hashes, capacity * sizeof(uint32_t))
                        if grown == NULL:
                            raise MemoryError()
                        hashes = grown
                    hashes[kept] = crc ^ 0xFFFFFFFF
                    kept += 1
        qsort(hashes, kept, sizeof(uint32_t), _ascending)
        distinct = []
        for j in range(kept):
            if len(distinct) == limit:
                break
            if j == 0 or hashes[j] != hashes[j - 1]:
                distinct.append(hashes[j])
        return words, distinct
    finally:
        free(hashes)


# -- the volatile-token mask ------------------------------------------------------------
# normalise._VOLATILE.sub("#", text), by hand: at each position the regex's alternatives
# in its order, with re's Unicode classes (\d: Py_UNICODE_ISDECIMAL, \w: alphanumeric or
# "_", \s: Py_UNICODE_ISSPACE, \b: a change of \w); where the regex could backtrack the
# comments say why only the longest choice can match.

include "_tokens.pxi"  # the token readers the mask and the figures share


cdef Py_ssize_t _duration(int kind, void* data, Py_ssize_t n, Py_ssize_t p):
    # a shorter number ends before a digit or ".", where no unit nor space starts
    cdef Py_ssize_t e, end
    if not _boundary(kind, data, n, p):
        return -1
    e = _number(kind, data, n, p)
    if e < 0:
        return -1
    if _space(_at(kind, data, n, e)):
        e += 1
    for unit in ("ms", "s", "sec", "secs", "seconds", "m", "min", "h"):
        if _literal(kind, data, n, e, unit):
            end = e + len(unit)
            if _boundary(kind, data, n, end):
                return end
    return -1


cdef Py_ssize_t _volatile_at(int kind, void* data, Py_ssize_t n, Py_ssize_t p):
    """The end of the volatile token at ``p``, or -1: the alternatives in order."""
    cdef Py_UCS4 ch = _at(kind, data, n, p)
    cdef Py_ssize_t e
    if not (_dec(ch) or _hex(ch) or ch == u'/'):
        return -1
    e = _uuid(kind, data, n, p)
    if e < 0:
        e = _iso_time(kind, data, n, p)
    if e < 0:
        e = _clock(kind, data, n, p)
    if e < 0:
        e = _temp_path(kind, data, n, p)
    if e < 0:
        e = _address(kind, data, n, p)
    if e < 0:
        e = _hex_id(kind, data, n, p)
    if e < 0:
        e = _duration(kind, data, n, p)
    if e < 0:
        e = _number(kind, data, n, p)
    return e


def mask_volatile(str text):
    """``text`` with each volatile token (uuid, ISO or clock time, temporary path,
    address, hex id, duration, number) replaced by ``#``."""
    cdef Py_ssize_t n = len(text), p = 0, last = 0, e
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    pieces = []
    while p < n:
        e = _volatile_at(kind, data, n, p)
        if e > p:
            if last < p:
                pieces.append(text[last:p])
            pieces.append("#")
            p = last = e
        else:
            p += 1
    if last == 0:
        return text
    if last < n:
        pieces.append(text[last:])
    return "".join(pieces)


# -- the figures of a result -------------------------------------------------------------
# progress.py's figures: _NOT_FIGURES.sub(" ", text), then every \d+(\.\d+)? of what is
# left, joined by a space; the alternatives in the regex's order, with the passes above
# where the two regexes share one.

cdef Py_ssize_t _date(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # a date, then the optional time of the ISO alternative (taken whenever it matches)
    cdef Py_ssize_t e
    if not (_all_dec(kind, data, n, p, 4) and _at(kind, data, n, p + 4) == u'-'
            and _all_dec(kind, data, n, p + 5, 2) and _at(kind, data, n, p + 7) == u'-'
            and _all_dec(kind, data, n, p + 8, 2)):
        return -1
    e = _iso_time(kind, data, n, p)
    return e if e >= 0 else p + 10


cdef Py_ssize_t _clock_fraction(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # \b\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\b: the longest choice ending at \b, shorter ones
    # in turn (a fraction cut short ends between digits, where no \b is)
    cdef Py_ssize_t e = p + 1, seconds, fraction
    if not _boundary(kind, data, n, p) or not _dec(_at(kind, data, n, p)):
        return -1
    if _dec(_at(kind, data, n, e)):
        e += 1
    if _at(kind, data, n, e) != u':' or not _all_dec(kind, data, n, e + 1, 2):
        return -1
    e += 3
    if _at(kind, data, n, e) == u':' and _all_dec(kind, data, n, e + 1, 2):
        seconds = e + 3
        if _at(kind, data, n, seconds) == u'.' and _dec(_at(kind, data, n, seconds + 1)):
            fraction = _digits(kind, data, n, seconds + 1)
            if _boundary(kind, data, n, fraction):
                return fraction
        if _boundary(kind, data, n, seconds):
            return seconds
    return e if _boundary(kind, data, n, e) else -1


FIGURE_UNITS = ("ms", "s", "sec", "secs", "seconds", "m", "min", "h", "us", "µs", "ns")
AGES = ("ago", "left")


cdef inline bint _starts_a_unit(Py_UCS4 ch, bint ages) noexcept:
    if ages:
        return ch == u'a' or ch == u'l'
    return (ch == u'm' or ch == u's' or ch == u'h' or ch == u'u' or ch == u'n'
            or ch == u'\u00b5')


cdef Py_ssize_t _number_then(int kind, void* data, Py_ssize_t n, Py_ssize_t p, bint ages):
    # \b\d+(\.\d+)?\s?(words)\b, the words: AGES or FIGURE_UNITS; the number is read
    # whole (a shorter one ends before a digit or ".", where no word nor space starts)
    cdef Py_ssize_t e, end
    if not _boundary(kind, data, n, p):
        return -1
    e = _number(kind, data, n, p)
    if e < 0:
        return -1
    if _space(_at(kind, data, n, e)):
        e += 1
    if not _starts_a_unit(_at(kind, data, n, e), ages):
        return -1  # no word starts here: the words are not read one by one
    for word in (AGES if ages else FIGURE_UNITS):
        if _literal(kind, data, n, e, word):
            end = e + len(word)
            if _boundary(kind, data, n, end):
                return end
    return -1


cdef Py_ssize_t _compound(int kind, void* data, Py_ssize_t n, Py_ssize_t p) noexcept:
    # \b\d+(\.\d+)?[smh]\d (1m30s)
    cdef Py_ssize_t e
    cdef Py_UCS4 unit
    if not _boundary(kind, data, n, p):
        return -1
    e = _number(kind, data, n, p)
    if e < 0:
        return -1
    unit = _at(kind, data, n, e)
    if (unit == u's' or unit == u'm' or unit == u'h') and _dec(_at(kind, data, n, e + 1)):
        return e + 2
    return -1


cdef Py_ssize_t _not_figure_at(int kind, void* data, Py_ssize_t n, Py_ssize_t p):
    """The end of the token at ``p`` that is not a figure, or -1."""
    cdef Py_UCS4 ch = _at(kind, data, n, p)
    cdef Py_ssize_t e
    if not (_dec(ch) or _hex(ch) or ch == u'/'):
        return -1
    e = _uuid(kind, data, n, p)
    if e < 0:
        e = _date(kind, data, n, p)
    if e < 0:
        e = _clock_fraction(kind, data, n, p)
    if e < 0:
        e = _temp_path(kind, data, n, p)
    if e < 0:
        e = _address(kind, data, n, p)
    if e < 0:
        e = _hex_id(kind, data, n, p)
    if e < 0:
        e = _number_then(kind, data, n, p, False)
    if e < 0:
        e = _compound(kind, data, n, p)
    if e < 0:
        e = _number_then(kind, data, n, p, True)
    return e


def figures(str text):
    """The numbers of ``text`` that are figures (times, ids, paths, durations and ages
    taken out first), joined by a space."""
    cdef Py_ssize_t n = len(text), p = 0, last = 0, e
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    pieces = []
    while p < n:
        e = _not_figure_at(kind, data, n, p)
        if e > p:
            if last < p:
                pieces.append(text[last:p])
            pieces.append(" ")
            p = last = e
        else:
            p += 1
    if last:
        if last < n:
            pieces.append(text[last:])
        text = "".join(pieces)
        n = len(text)
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
    kept = []
    p = 0
    while p < n:
        e = _number(kind, data, n, p)
        if e > p:
            kept.append(text[p:e])
            p = e
        else:
            p += 1
    return " ".join(kept)
