# The loopwarden worker image used by docker-compose.yml.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY loopwarden ./loopwarden
COPY agents ./agents
COPY schemas ./schemas
COPY storage ./storage
COPY streams ./streams
RUN pip install --no-cache-dir ".[worker]" \
    && mkdir -p /data /memory && chown nobody /data /memory

# Faust's data directory (one volume per worker) and the LanceDB memory store (a volume
# shared by the workers, or an object-store URI in LOOPWARDEN_MEMORY__URI)
ENV LOOPWARDEN_DATA_DIR=/data LOOPWARDEN_MEMORY__URI=/memory
VOLUME ["/data", "/memory"]
EXPOSE 6066
USER nobody
ENTRYPOINT ["loopwarden"]
CMD ["worker"]
