"""Randomness: the operating system's secure randomness by default, seeds for simulation."""

import numbers
import os
import secrets

import numpy as np
from randomgen import AESCounter, ChaCha

# Cryptographically secure generators keyed from the operating system (``secrets``),
# unlike PCG64 or MT19937. AES-128 in counter mode needs the CPU's AES instructions
# (software AES is slow and leaks through cache timing); else ChaCha20.
_CHACHA_ROUNDS = 20


def secure_generator():
    """Return a numpy Generator driven by a CSPRNG keyed from the OS's secure randomness.

    AES-128 in counter mode on the CPU's AES instructions (AES-NI), keyed with 128 bits
    from :mod:`secrets`; ChaCha20 with a 256-bit key where the CPU has no AES
    instructions.

    Returns
    -------
    generator : numpy.random.Generator
        A fresh generator with a fresh key.
    """
    aes = AESCounter(key=secrets.randbits(128))
    if aes.use_aesni:
        return np.random.Generator(aes)
    return np.random.Generator(ChaCha(key=secrets.randbits(256), rounds=_CHACHA_ROUNDS))


#: Draws of at most this many 64-bit words, before the deferred generator is built, are
#: read from the operating system directly (:class:`DeferredSecureGenerator`).
_OS_WORDS = 64


class DeferredSecureGenerator:
    """The secure generator of one release, keyed only when a draw needs it (internal).

    Keying costs about 40 microseconds, more than the rest of a small release: up to
    ``_OS_WORDS`` words are read from :func:`os.urandom` directly; any larger draw or
    other use (attributes are forwarded) builds the generator once. Both sources are
    cryptographically secure, so mixing them changes no distribution.
    """

    def __init__(self):
        self._generator = None

    @property
    def generator(self):
        """The secure numpy Generator, built at first use."""
        if self._generator is None:
            self._generator = secure_generator()
        return self._generator

    def random_raw(self, size):
        """``size`` uniform 64-bit words (a new, writable uint64 array)."""
        if self._generator is None and size <= _OS_WORDS:
            return np.frombuffer(bytearray(os.urandom(8 * size)), dtype=np.uint64)
        return self.generator.bit_generator.random_raw(size)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.generator, name)


def random_words(rng, size):
    """``size`` uniform 64-bit words from ``rng`` (a Generator or a deferred one)."""
    if type(rng) is DeferredSecureGenerator:
        return rng.random_raw(size)
    return rng.bit_generator.random_raw(size)


def release_random_state(random_state):
    """:func:`check_random_state` for one fit: ``None`` gives a deferred secure generator.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState

    Returns
    -------
    generator : numpy.random.Generator or DeferredSecureGenerator
    """
    if random_state is None:
        return DeferredSecureGenerator()
    return check_random_state(random_state)


def check_random_state(random_state):
    """Turn ``random_state`` into a numpy Generator.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` gives a secure generator (:func:`secure_generator`): use it for real
        releases. An int or a Generator gives reproducible noise, for simulations and
        tests only: anyone who knows the seed can subtract the noise. The library's
        internal :class:`DeferredSecureGenerator` is returned as it is.

    Returns
    -------
    generator : numpy.random.Generator
    """
    if random_state is None:
        return secure_generator()
    if isinstance(random_state, (np.random.Generator, DeferredSecureGenerator)):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        # Keep the legacy object's stream: derive a Generator seeded from it.
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise ValueError(
        "random_state must be None, an int, a numpy Generator or RandomState; "
        f"got {random_state!r}"
    )
