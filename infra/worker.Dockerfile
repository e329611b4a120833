# The loopwarden worker image used by docker-compose.yml.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY loopwarden ./loopwarden
COPY agents ./agents
COPY schemas ./schemas
COPY storage ./storage
COPY streams ./streams
RUN pip install --no-cache-dir .

USER nobody
ENTRYPOINT ["loopwarden"]
CMD ["worker"]
