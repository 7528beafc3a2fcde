"""The shared bitmask layout: int32 words, token t is bit (t % 32) of word
t // 32 (the layout all four engines use)."""

import zlib

import numpy as np


def bit_is_set(words, token_id):
    """`words` is a 1-D int32 numpy view of one mask row."""
    word = int(words[token_id >> 5]) & 0xFFFFFFFF
    return (word >> (token_id & 31)) & 1 == 1


def popcount(words, n_bits):
    """Number of allowed ids below n_bits."""
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    return int(bits[:n_bits].sum())


def digest(words, n_bits):
    """CRC of the first n_bits (n_bits % 32 == 0): equal masks, equal digests.
    Used on the text tokens only, since engines legitimately differ on which
    special/stop ids they set."""
    return zlib.crc32(words[: n_bits // 32].tobytes())
