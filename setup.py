"""The compiled extension of loopwarden; everything else is in ``pyproject.toml``.

``optional=True``: where no C compiler is found the install goes on without it and the
pure-Python twins run (``agents/spin/textscan.py``). Cython comes with the build
(``build-system.requires``). Declared here rather than in ``pyproject.toml``, where
setuptools still calls ``ext-modules`` experimental.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "loopwarden.agents.spin._textscan",
            sources=["agents/spin/_textscan.pyx"],
            depends=["agents/spin/_tokens.pxi"],  # included: rebuilt with it, in the sdist
            optional=True,
        )
    ]
)
