# The neardup image used by docker-compose.yml: the package and its command, nothing else.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY core core
COPY state state
COPY streams streams
COPY samples samples
RUN pip install --no-cache-dir .
ENTRYPOINT ["neardup"]
