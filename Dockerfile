# The image of docker-compose.yml's web, worker and beat services.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Requirements first: this layer is rebuilt only when they change, not on every code change.
COPY requirements.txt ./
RUN pip install -r requirements.txt

COPY . .

# collectstatic reads no secret and no database; the key below exists only for this step.
RUN DJANGO_DEBUG=0 DJANGO_SECRET_KEY=collectstatic-only \
    python manage.py collectstatic --noinput

RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin app
USER app

EXPOSE 8000
# No control socket: it would go to $HOME (/app), which this user cannot write.
CMD ["gunicorn", "project.wsgi:application", "--bind", "0.0.0.0:8000", "--no-control-socket"]
