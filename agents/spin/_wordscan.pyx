# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled word scan of :mod:`loopwarden.agents.spin.wordscan` (its pure-Python
twin there gives the same outputs; ``tests/unit/test_wordscan.py`` checks both on
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
