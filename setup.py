"""Package metadata, dependencies and the t2t-* commands."""

from pathlib import Path

from setuptools import find_packages, setup

# Catalog and binaries live at the top of the repository but install inside
# the t2t_keras namespace: nothing named bare `problems`, `hparams` or `bin`.
MAPPED = {"t2t_keras.problems": "problems", "t2t_keras.hparams": "hparams", "t2t_keras.bin": "bin"}


def _packages() -> list[str]:
    packages = find_packages(include=["t2t_keras", "t2t_keras.*"])
    for package, directory in MAPPED.items():
        packages.append(package)
        packages += [f"{package}.{sub}" for sub in find_packages(where=directory)]
    return packages


def _package_dir() -> dict[str, str]:
    mapping = dict(MAPPED)
    for package, directory in MAPPED.items():
        for sub in find_packages(where=directory):
            mapping[f"{package}.{sub}"] = f"{directory}/{sub.replace('.', '/')}"
    return mapping


setup(
    name="t2t_keras",
    version="0.1.0",
    description='The Transformer of "Attention Is All You Need" on TensorFlow 2 and Keras 3, '
    "with tensor2tensor's workflow.",
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=_packages(),
    package_dir=_package_dir(),
    package_data={"t2t_keras.server": ["page.html"]},
    install_requires=[
        "tensorflow~=2.21.0",
        "tensorflow-text~=2.21.0",
        "tensorflow-datasets>=4.9",
        # tensorflow-datasets downloads with it but does not require it.
        "importlib_resources>=6",
        "sacrebleu>=2.4",
        "absl-py>=2.1",
        "sentencepiece>=0.2",
        "tensorboard>=2.20",
        "sacremoses>=0.1",
        # t2t-importer reads a pretrained model's weights without PyTorch.
        "safetensors>=0.4",
        "matplotlib>=3.8",
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-xdist>=3.6",
            "hypothesis>=6.100",
            "ruff==0.17.6",
            "mypy==2.4.1",
            # TF Serving's PredictionLog, which the SavedModel's warmup records are read as.
            "tensorflow-serving-api~=2.21.0",
            # The server's page, in a real headless Chromium (Debian's chromium-driver).
            "selenium>=4.20",
        ],
        # t2t-server: an ASGI app on uvicorn (with the C HTTP parser and event loop it
        # picks when installed: a request costs less CPU), metrics in Prometheus format.
        "server": [
            "starlette>=0.40",
            "uvicorn>=0.30",
            "httptools>=0.6",
            "uvloop>=0.19",
            "prometheus_client>=0.20",
        ],
        # CTranslate2 export and decoding (t2t-exporter --export_format=ctranslate2,
        # t2t-decoder --runtime=ctranslate2).
        "ctranslate2": ["ctranslate2>=4.5,<5"],
        # The peers of benchmarks/peers_multi30k.py (Marian on PyTorch) and
        # benchmarks/peers.py (with CTranslate2); never needed by the tests.
        # On a CPU-only machine install a CPU build of torch first.
        "peers": ["torch>=2.6", "transformers>=5.23,<6", "ctranslate2>=4.5,<5"],
    },
    entry_points={
        "console_scripts": [
            "t2t-datagen=t2t_keras.bin.t2t_datagen:run",
            "t2t-trainer=t2t_keras.bin.t2t_trainer:run",
            "t2t-decoder=t2t_keras.bin.t2t_decoder:run",
            "t2t-bleu=t2t_keras.bin.t2t_bleu:run",
            "t2t-evalb=t2t_keras.bin.t2t_evalb:run",
            "t2t-avg-checkpoints=t2t_keras.bin.t2t_avg_checkpoints:run",
            "t2t-exporter=t2t_keras.bin.t2t_exporter:run",
            "t2t-importer=t2t_keras.bin.t2t_importer:run",
            "t2t-benchmark=t2t_keras.bin.t2t_benchmark:run",
            "t2t-score=t2t_keras.bin.t2t_score:run",
            "t2t-server=t2t_keras.bin.t2t_server:run",
        ]
    },
    classifiers=[
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
