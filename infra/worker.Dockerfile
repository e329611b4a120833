# The loopwarden worker image used by docker-compose.yml.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY loopwarden ./loopwarden
COPY agents ./agents
COPY schemas ./schemas
COPY storage ./storage
COPY streams ./streams
RUN pip install --no-cache-dir . \
    && mkdir -p /data && chown nobody /data

# Faust's data directory and the LanceDB memory store (mount a volume here)
ENV LOOPWARDEN_DATA_DIR=/data LOOPWARDEN_MEMORY__URI=/data/memory
VOLUME ["/data"]
USER nobody
ENTRYPOINT ["loopwarden"]
CMD ["worker"]
