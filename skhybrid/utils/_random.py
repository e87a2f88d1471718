"""Randomness: the operating system's secure randomness by default, seeds for simulation."""

import secrets
import numbers

import numpy as np
from randomgen import AESCounter, ChaCha

# Both are cryptographically secure generators keyed from the operating system
# (``secrets``): their output cannot be predicted from earlier outputs, unlike PCG64 or
# MT19937. AES-128 in counter mode (the core of NIST's CTR_DRBG) runs on the CPU's AES
# instructions, about four times faster than ChaCha20; without them (software AES is
# slow and leaks through cache timing) ChaCha20 is used.
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


def check_random_state(random_state):
    """Turn ``random_state`` into a numpy Generator.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` gives a secure generator (:func:`secure_generator`): use it for real
        releases. An int or a Generator gives reproducible noise, for simulations and
        tests only: anyone who knows the seed can subtract the noise.

    Returns
    -------
    generator : numpy.random.Generator
    """
    if random_state is None:
        return secure_generator()
    if isinstance(random_state, np.random.Generator):
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
