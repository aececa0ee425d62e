# memstream: worker, API and Kafka tools in one image (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    PYTHONPATH=/app \
    MEMSTREAM_DATA_DIR=/data

WORKDIR /app

# The CPU build of torch first: an unpinned torch would pull several GB of CUDA wheels.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

# Dependencies before sources, so a code change does not reinstall them.
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY language ./language
COPY agents ./agents
COPY retrieval ./retrieval
COPY backends ./backends
COPY streams ./streams
COPY memstream ./memstream
COPY bench ./bench
COPY ops ./ops
RUN pip install ".[prod]" \
    && python -m compileall -q -j 0 schemas language agents retrieval backends streams memstream bench

RUN useradd --system --create-home --uid 10001 memstream \
    && mkdir -p /data && chown memstream /data
USER memstream
VOLUME ["/data"]
EXPOSE 8080

CMD ["memstream", "serve", "--host", "0.0.0.0", "--port", "8080"]
