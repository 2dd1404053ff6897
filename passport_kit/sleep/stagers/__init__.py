"""The pretrained sleep stagers shipped with passport-kit, one module each: the registry imports every module here
(:func:`~passport_kit.sleep.priors.available_priors`), and each registers the
:class:`~passport_kit.sleep.priors.SleepPrior` subclasses it defines.

A new stager is one file here and its test: its class sets ``name``, ``licence``, ``origin`` (the words every help
text lists it with), ``native_rate`` and, to be tried by ``--prior auto`` where it runs, ``auto_order``; the help of
``adapt --prior`` and ``predict --zero-shot`` and the ``auto`` list come from the registry. A stager under a licence
the package cannot carry (GSSC, AGPL-3.0) imports its package only when it runs and says how to install it
(``unavailable``).
"""
