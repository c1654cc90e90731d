"""Labelled fake secrets, benign text and an agent-log-like corpus, all generated
from a seed, for the redaction tests and benchmark.

Every secret here is random characters in the shape of a real format (GitHub
tokens even fail their built-in checksum). None is real, and none is copied
from anywhere.

    labelled_samples(seed)     -> [Sample(kind, context, text, secrets)]
    benign_documents(seed, n)  -> documents of n benign lines in total
    agent_log_texts(seed, n)   -> str fields of about n bytes, some with secrets
"""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
import uuid
from dataclasses import dataclass
from typing import Callable

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
BASE32 = string.ascii_uppercase + "234567"
PASSWORD_SYMBOLS = "!@#%^*_+=.~?-"
STYLES = ("env", "json", "yaml", "python", "curl", "prose", "log")


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64(rng: random.Random, n_bytes: int) -> str:
    return base64.b64encode(rng.randbytes(n_bytes)).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def fake_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# -- kinds of secret ---------------------------------------------------------------------


@dataclass(frozen=True)
class Secret:
    """A generated secret: ``value`` goes into snippets; ``must_vanish`` are the
    strings that must not survive redaction (by default the value itself)."""

    value: str
    must_vanish: tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    name: str
    rule: str  # the rule whose marker should replace it
    provider: bool  # provider-specific format: recall must be 100%
    make: Callable[[random.Random], Secret]
    snippet: Callable[[random.Random, str, str], str]


@dataclass(frozen=True)
class Sample:
    kind: str
    context: str
    text: str
    secrets: tuple[str, ...]


def token(make_value: Callable[[random.Random], str]) -> Callable[[random.Random], Secret]:
    def make(rng):
        value = make_value(rng)
        return Secret(value, (value,))

    return make


def token_snippet(env: str, field: str) -> Callable[[random.Random, str, str], str]:
    """How a bare token appears in each style, under realistic names."""

    def snippet(rng, value, style):
        if style == "env":
            return f"{env}={value}"
        if style == "json":
            return f'"{field}": {json.dumps(value)}'
        if style == "yaml":
            return f"{field}: {value}"
        if style == "python":
            return f'{field} = "{value}"'
        if style == "curl":
            return rng.choice(
                [
                    f'-H "Authorization: Bearer {value}"',
                    f"-H 'X-Api-Key: {value}'",
                    f'-u "{value}:"',
                    f'"https://api.example.test/v1/items?key={value}&limit=20"',
                ]
            )
        if style == "prose":
            return rng.choice(
                [f"`{value}`", value, f"the key {value} (rotated last week)", f'"{value}"']
            )
        return rng.choice(
            [f"credential={value}", f"loaded key {value} from keyring", f"key: {value}"]
        )

    return snippet


def assignment_snippet(
    names: list[str], fields: list[str], quote_prose: bool = True
) -> Callable[[random.Random, str, str], str]:
    """How a value that needs a name next to it (passwords, secret keys) appears."""

    def snippet(rng, value, style):
        name, field = rng.choice(names), rng.choice(fields)
        if style == "env":
            return f"{name}={value}"
        if style == "json":
            return f'"{field}": {json.dumps(value)}'
        if style == "yaml":
            return f"{field}: {value}" if rng.random() < 0.5 else f'{field}: "{value}"'
        if style == "python":
            return f"{field}={value!r}" if rng.random() < 0.5 else f'{field} = "{value}"'
        if style == "curl":
            return rng.choice(
                [f"-d '{field}={value}'", f'-H "{name}: {value}"', f"--data-urlencode {field}={value}"]
            )
        if style == "prose":
            return f"{field}: `{value}`" if quote_prose else f"{name}={value}"
        return f"{field}={value}"

    return snippet


def multiline_snippet(env: str, field: str) -> Callable[[random.Random, str, str], str]:
    """How a multi-line secret (a PEM key) appears in each style."""

    def snippet(rng, value, style):
        if style == "env":
            return f'{env}="{value}"'
        if style == "json":
            return f'"{field}": {json.dumps(value)}'
        if style == "yaml":
            return f"{field}: |\n" + textwrap.indent(value, "  ")
        if style == "python":
            return f'{field} = """{value}"""'
        if style == "curl":
            return f"-d '{{\"{field}\": {json.dumps(value)}}}'"
        if style == "prose":
            return f"\n```\n{value}\n```\n"
        return f"loaded {field}:\n{value}"

    return snippet


def pem_block(rng: random.Random, label: str, n_bytes: int, width: int = 64, headers: str = "") -> str:
    body = base64.b64encode(rng.randbytes(n_bytes)).decode()
    if label == "OPENSSH PRIVATE KEY":
        body = "b3BlbnNzaC1rZXktdjEAAAAA" + body
        width = 70
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return f"-----BEGIN {label}-----\n{headers}" + "\n".join(lines) + f"\n-----END {label}-----"


def make_private_key(rng: random.Random) -> Secret:
    choice = rng.randrange(5)
    if choice == 0:
        key = pem_block(rng, "RSA PRIVATE KEY", 1190)
    elif choice == 1:
        key = pem_block(rng, "EC PRIVATE KEY", 121)
    elif choice == 2:
        key = pem_block(rng, "OPENSSH PRIVATE KEY", 380)
    elif choice == 3:
        key = pem_block(rng, "PRIVATE KEY", 1218)
    else:
        iv = chars(rng, "0123456789ABCDEF", 32)
        headers = f"Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,{iv}\n\n"
        key = pem_block(rng, "RSA PRIVATE KEY", 1192, headers=headers)
    return Secret(key, pem_body_lines(key))


def pem_body_lines(key: str) -> tuple[str, ...]:
    return tuple(line for line in key.splitlines() if len(line) >= 16 and "-----" not in line)


def make_service_account(rng: random.Random) -> Secret:
    key = pem_block(rng, "PRIVATE KEY", 1218)
    key_id = chars(rng, HEX, 40)
    project = rng.choice(["acme-data", "demo-prod-4821", "ml-pipeline"])
    account = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": key_id,
        "private_key": key + "\n",
        "client_email": f"ingest@{project}.iam.gserviceaccount.com",
        "client_id": chars(rng, "0123456789", 21),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    return Secret(json.dumps(account, indent=2), (key_id,) + pem_body_lines(key))


def service_account_snippet(rng, value, style):
    compact = json.dumps(json.loads(value))
    if style == "env":
        return f"GOOGLE_CREDENTIALS_JSON='{compact}'"
    if style == "json":
        return f'"credentials": {compact}'
    if style == "yaml":
        return "service-account.json: |\n" + textwrap.indent(value, "  ")
    if style == "python":
        return f"SERVICE_ACCOUNT_INFO = {value}"
    if style == "curl":
        return f"-d '{compact}'"
    if style == "prose":
        return f"\n```json\n{value}\n```\n"
    return f"read credentials file: {compact}"


def make_jwt(rng: random.Random) -> str:
    header = {"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    payload = {
        "sub": fake_uuid(rng),
        "iat": rng.randrange(1_700_000_000, 1_800_000_000),
        "exp": rng.randrange(1_800_000_000, 1_900_000_000),
        "scope": rng.choice(["read write", "openid profile email", "api"]),
    }
    if rng.random() < 0.5:
        payload["email"] = f"user{rng.randrange(1000)}@example.test"
    signature = chars(rng, B64URL, 43 if header["alg"] == "HS256" else 342)
    return ".".join(
        [b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()), signature]
    )


def make_datasette_token(rng: random.Random) -> str:
    body = {"a": rng.choice(["root", "alex"]), "t": rng.randrange(1_700_000_000, 1_800_000_000)}
    if rng.random() < 0.5:
        body["d"] = rng.randrange(60, 86400)
    return "dstok_" + b64url(json.dumps(body).encode()) + "." + chars(rng, B64URL, 27)


def make_openai_key(rng: random.Random) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        return "sk-proj-" + chars(rng, B64URL, 74) + "T3BlbkFJ" + chars(rng, B64URL, 74)
    if choice == 1:
        return "sk-svcacct-" + chars(rng, B64URL, 74) + "T3BlbkFJ" + chars(rng, B64URL, 74)
    return "sk-" + chars(rng, ALNUM, 20) + "T3BlbkFJ" + chars(rng, ALNUM, 20)


def make_url_password(rng: random.Random) -> Secret:
    password = chars(rng, ALNUM + "-._~!*", rng.randint(10, 24))
    return Secret(password, (password,))


def url_credentials_snippet(rng, password, style):
    user = rng.choice(["app", "admin", "deploy", "svc_etl", "postgres", "x-access-token"])
    scheme, port = rng.choice(
        [("postgres", 5432), ("postgresql", 5432), ("mysql", 3306), ("redis", 6379), ("amqp", 5672), ("https", 443)]
    )
    host = rng.choice(["db.internal.test", "10.0.3.17", "cache-01.svc.cluster.local", "mq.example.test"])
    url = f"{scheme}://{user}:{password}@{host}:{port}/{rng.choice(['app', 'prod', '0', 'jobs'])}"
    if style == "env":
        return f"DATABASE_URL={url}"
    if style == "json":
        return f'"url": {json.dumps(url)}'
    if style == "yaml":
        return f"dsn: {url}"
    if style == "python":
        return f'engine = create_engine("{url}")'
    if style == "curl":
        return f'"https://{user}:{password}@git.example.test/org/repo.git"'
    if style == "prose":
        return f"connect with <{url}>"
    return f"connecting to {url} (attempt 2)"


def make_password(rng: random.Random) -> Secret:
    while True:
        value = chars(rng, ALNUM + PASSWORD_SYMBOLS, rng.randint(10, 20))
        if any(c.isdigit() for c in value) and any(c in PASSWORD_SYMBOLS for c in value):
            return Secret(value, (value,))


def make_bearer(rng: random.Random) -> Secret:
    value = chars(rng, B64URL + ".", rng.randint(32, 64))
    return Secret(value, (value,))


def bearer_snippet(rng, value, style):
    if style == "json":
        return f'"Authorization": "Bearer {value}"'
    if style == "yaml":
        return f"authorization: Bearer {value}"
    if style == "python":
        return f'headers = {{"Authorization": "Bearer {value}"}}'
    if style == "curl":
        return f'-H "Authorization: Bearer {value}"'
    if style in ("env", "log"):
        return f"> Authorization: Bearer {value}"
    return f"Authorization: Bearer {value}"


def simple(name, rule, make_value, env, field, provider=True):
    return Kind(name, rule, provider, token(make_value), token_snippet(env, field))


def digits(rng: random.Random, n: int) -> str:
    return chars(rng, "0123456789", n)


def make_slack_token(rng: random.Random) -> str:
    return rng.choice([
        f"xoxb-{digits(rng, 12)}-{digits(rng, 13)}-{chars(rng, ALNUM, 24)}",
        "xoxp-" + "-".join(digits(rng, 12) for _ in range(3)) + "-" + chars(rng, HEX, 32),
        f"xapp-1-A{chars(rng, UPPER_DIGITS, 10)}-{digits(rng, 13)}-{chars(rng, HEX, 64)}",
    ])


def make_slack_webhook(rng: random.Random) -> Secret:
    path = f"T{chars(rng, UPPER_DIGITS, 10)}/B{chars(rng, UPPER_DIGITS, 10)}/{chars(rng, ALNUM, 24)}"
    return Secret("https://hooks.slack.com/services/" + path, (path,))


def azure_snippet(rng, value, style):
    if style in ("env", "log"):
        return (
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;"
            f"AccountName=acme{rng.randrange(99)};AccountKey={value};EndpointSuffix=core.windows.net"
        )
    names = assignment_snippet(["AZURE_STORAGE_KEY"], ["AccountKey", "account_key", "storageAccountKey"])
    return names(rng, value, style)


KINDS: list[Kind] = [
    simple("aws-access-key-id", "aws-access-key-id",
           lambda r: r.choice(["AKIA", "ASIA"]) + chars(r, BASE32, 16),
           "AWS_ACCESS_KEY_ID", "aws_access_key_id"),
    Kind("aws-secret-access-key", "aws-secret-access-key", True,
         token(lambda r: chars(r, ALNUM + "/+", 40)),
         assignment_snippet(["AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"],
                            ["aws_secret_access_key", "SecretAccessKey", "awsSecretKey"])),
    simple("github-pat", "github-pat",
           lambda r: "ghp_" + chars(r, ALNUM, 36), "GITHUB_TOKEN", "github_token"),
    simple("github-oauth", "github-oauth-token",
           lambda r: "gho_" + chars(r, ALNUM, 36), "GH_TOKEN", "oauth_token"),
    simple("github-app", "github-app-token",
           lambda r: r.choice(["ghs_", "ghu_"]) + chars(r, ALNUM, 36),
           "GITHUB_APP_TOKEN", "installation_token"),
    simple("github-refresh", "github-refresh-token",
           lambda r: "ghr_" + chars(r, ALNUM, 76), "GITHUB_REFRESH_TOKEN", "refresh_token"),
    simple("github-fine-grained", "github-fine-grained-pat",
           lambda r: "github_pat_" + chars(r, ALNUM, 22) + "_" + chars(r, ALNUM, 59),
           "GITHUB_PAT", "pat"),
    simple("gitlab-pat", "gitlab-token",
           lambda r: "glpat-" + chars(r, B64URL, 20), "GITLAB_TOKEN", "private_token"),
    simple("slack-token", "slack-token", make_slack_token, "SLACK_BOT_TOKEN", "slack_token"),
    Kind("slack-webhook", "slack-webhook", True, make_slack_webhook,
         token_snippet("SLACK_WEBHOOK_URL", "webhook_url")),
    simple("stripe-key", "stripe-key",
           lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + chars(r, ALNUM, r.choice([24, 99])),
           "STRIPE_SECRET_KEY", "stripe_key"),
    simple("openai-api-key", "openai-api-key", make_openai_key, "OPENAI_API_KEY", "openai_api_key"),
    simple("anthropic-api-key", "anthropic-api-key",
           lambda r: "sk-ant-api03-" + chars(r, B64URL, 93) + "AA", "ANTHROPIC_API_KEY", "api_key"),
    simple("anthropic-oauth-token", "anthropic-oauth-token",
           lambda r: r.choice(["sk-ant-oat01-", "sk-ant-ort01-"]) + chars(r, B64URL, 93) + "AA",
           "CLAUDE_CODE_OAUTH_TOKEN", "accessToken"),
    simple("google-api-key", "google-api-key",
           lambda r: "AIza" + chars(r, B64URL, 35), "GOOGLE_API_KEY", "apiKey"),
    Kind("gcp-service-account", "private-key", True, make_service_account, service_account_snippet),
    Kind("azure-storage-key", "azure-storage-key", True, token(lambda r: b64(r, 64)), azure_snippet),
    simple("npm-token", "npm-token",
           lambda r: "npm_" + chars(r, ALNUM, 36), "NPM_TOKEN", "npmToken"),
    simple("pypi-token", "pypi-token",
           lambda r: "pypi-AgEIcHlwaS5vcmc" + chars(r, B64URL, r.randint(120, 180)),
           "TWINE_PASSWORD", "pypi_token"),
    simple("twilio-api-key", "twilio-api-key",
           lambda r: "SK" + chars(r, HEX, 32), "TWILIO_API_KEY", "twilio_key_sid"),
    simple("sendgrid-api-key", "sendgrid-api-key",
           lambda r: "SG." + chars(r, B64URL, 22) + "." + chars(r, B64URL, 43),
           "SENDGRID_API_KEY", "sendgrid_key"),
    simple("datasette-token", "datasette-token", make_datasette_token, "DATASETTE_TOKEN", "datasette_token"),
    simple("huggingface-token", "huggingface-token",
           lambda r: "hf_" + chars(r, string.ascii_letters, 34), "HF_TOKEN", "hf_token"),
    simple("vault-token", "vault-token",
           lambda r: "hvs." + chars(r, B64URL, r.randint(90, 120)), "VAULT_TOKEN", "vault_token"),
    simple("digitalocean-token", "digitalocean-token",
           lambda r: "dop_v1_" + chars(r, HEX, 64), "DIGITALOCEAN_TOKEN", "do_token"),
    simple("databricks-token", "databricks-token",
           lambda r: "dapi" + chars(r, HEX, 32), "DATABRICKS_TOKEN", "db_token"),
    simple("telegram-bot-token", "telegram-bot-token",
           lambda r: chars(r, "123456789", 1) + digits(r, 9) + ":AA" + chars(r, B64URL, 33),
           "TELEGRAM_BOT_TOKEN", "bot_token"),
    simple("jwt", "jwt", make_jwt, "ACCESS_TOKEN", "id_token", provider=False),
    Kind("private-key", "private-key", False, make_private_key,
         multiline_snippet("SSH_PRIVATE_KEY", "private_key")),
    Kind("bearer-header", "authorization-header", False, make_bearer, bearer_snippet),
    Kind("url-credentials", "url-credentials", False, make_url_password, url_credentials_snippet),
    Kind("generic-password", "generic-password", False, make_password,
         assignment_snippet(["DB_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "REDIS_PASS"],
                            ["password", "db_password", "adminPassword", "passwd"])),
    Kind("generic-api-key", "generic-secret", False,
         token(lambda r: r.choice([chars(r, HEX, 32), chars(r, ALNUM, 40), chars(r, ALNUM, 32)])),
         assignment_snippet(["ACME_API_KEY", "SERVICE_SECRET", "WEBHOOK_SECRET", "APP_AUTH_TOKEN"],
                            ["api_key", "apiKey", "client_secret", "secret_key", "auth_token", "access_token"])),
]
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


# -- contexts: where a snippet sits --------------------------------------------------------


def env_dump(rng, snippet):
    lines = [
        "NODE_ENV=production",
        f"PORT={rng.choice([3000, 8000, 8080])}",
        "LOG_LEVEL=info",
        snippet("env"),
        f"SESSION_ID={fake_uuid(rng)}",
        "FEATURE_FLAGS=search,export",
    ]
    rng.shuffle(lines)
    return "$ cat .env\n" + "\n".join(lines) + "\n"


def curl_command(rng, snippet):
    return (
        "$ curl -sS -X POST https://api.example.test/v2/jobs \\\n"
        "    -H 'Content-Type: application/json' \\\n"
        f"    {snippet('curl')} \\\n"
        "    -d '{\"name\": \"nightly\", \"retries\": 3}'\n"
        f'{{"id": "{fake_uuid(rng)}", "status": "queued"}}\n'
    )


def json_tool_output(rng, snippet):
    """A tool printed a JSONL line: the secret sits inside JSON string escapes."""
    inner = (
        "{\n"
        f'  "name": "deploy-{rng.randrange(100)}",\n'
        f"  {snippet('json')},\n"
        f'  "region": "{rng.choice(["eu-west-1", "us-east-2"])}"\n'
        "}\n"
    )
    line = {
        "type": "user",
        "uuid": fake_uuid(rng),
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_" + chars(rng, ALNUM, 24),
                 "content": "$ cat config/deploy.json\n" + inner}
            ],
        },
    }
    return f"$ tail -n 1 ~/.claude/projects/x/{fake_uuid(rng)}.jsonl\n" + json.dumps(line) + "\n"


def stack_trace(rng, snippet):
    if rng.random() < 0.5:
        return (
            "Traceback (most recent call last):\n"
            '  File "/srv/app/worker.py", line 214, in run\n'
            "    client = connect(settings)\n"
            '  File "/srv/app/client.py", line 57, in connect\n'
            f"    {snippet('python')}\n"
            "  File \"/usr/lib/python3.12/site-packages/httpx/_client.py\", line 1015, in send\n"
            "    raise HTTPStatusError(message, request=request, response=response)\n"
            f"httpx.HTTPStatusError: Client error '401 Unauthorized' for url 'https://api.example.test/v1'\n"
        )
    return (
        f"Error: request rejected ({snippet('log')})\n"
        "    at ApiClient.send (/app/node_modules/@acme/sdk/dist/client.js:88:13)\n"
        "    at async main (/app/src/index.ts:42:5)\n"
        "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n"
    )


def base64_blob(rng, snippet):
    blob = b64(rng, rng.randint(400, 2000))
    if rng.random() < 0.5:
        wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
        split = wrapped.find("\n", len(wrapped) // 2)
        return f"$ base64 bundle.bin\n{wrapped[:split]}\n{snippet('env')}\n{wrapped[split + 1:]}\n"
    return "{" + f'"image": "data:image/png;base64,{blob}", {snippet("json")}, "width": 640' + "}"


def line_wrapped(rng, snippet):
    if rng.random() < 0.5:
        words = (
            "I checked the deployment settings and found the value that the job uses "
            f"at startup: {snippet('prose')} which is read before the migrations run, "
            "so rotating it needs a restart of every worker in the pool."
        )
        width = rng.choice([60, 72, 80])
        return textwrap.fill(words, width=width, break_long_words=False, break_on_hyphens=False)
    return (
        "$ docker run --rm \\\n"
        f"    -e {snippet('env')} \\\n"
        "    -v \"$PWD:/work\" \\\n"
        "    ghcr.io/acme/runner:1.4 sync\n"
    )


def python_source(rng, snippet):
    return (
        "import os\nimport httpx\n\n"
        f"BASE_URL = \"https://api.example.test/v{rng.randint(1, 3)}\"\n"
        f"{snippet('python')}\n\n\n"
        "def fetch(path: str) -> dict:\n"
        "    response = httpx.get(BASE_URL + path, timeout=10)\n"
        "    response.raise_for_status()\n"
        "    return response.json()\n"
    )


def yaml_config(rng, snippet):
    body = textwrap.indent(snippet("yaml"), "      ")
    return (
        "services:\n"
        "  api:\n"
        f"    image: ghcr.io/acme/api:{rng.randint(1, 9)}.{rng.randint(0, 20)}\n"
        "    environment:\n"
        "      LOG_LEVEL: info\n"
        f"{body}\n"
        "    ports:\n"
        "      - \"8080:8080\"\n"
    )


def log_line(rng, snippet):
    return (
        f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}:12:44.{rng.randint(100, 999)}Z "
        f"INFO [http] {snippet('log')} status=200 duration_ms={rng.randint(3, 900)}\n"
    )


def markdown_prose(rng, snippet):
    return (
        "I updated the configuration. The relevant part is:\n\n"
        f"```bash\nexport {snippet('env')}\n```\n\n"
        f"and in the notes: {snippet('prose')}\n\n"
        "Then run `make deploy` again."
    )


CONTEXTS = {
    "env-dump": env_dump,
    "curl": curl_command,
    "json-escaped-tool-output": json_tool_output,
    "stack-trace": stack_trace,
    "base64-blob": base64_blob,
    "line-wrapped": line_wrapped,
    "python-source": python_source,
    "yaml-config": yaml_config,
    "log-line": log_line,
    "markdown-prose": markdown_prose,
}


def labelled_samples(seed: int = 0, per_context: int = 2) -> list[Sample]:
    """Every kind in every context, ``per_context`` times: len(KINDS) * 10 * per_context samples."""
    rng = random.Random(seed)
    samples = []
    for kind in KINDS:
        for context_name, context in CONTEXTS.items():
            for _ in range(per_context):
                secret = kind.make(rng)
                text = context(rng, lambda style: kind.snippet(rng, secret.value, style))
                samples.append(Sample(kind.name, context_name, text, secret.must_vanish))
    return samples


# -- benign text ---------------------------------------------------------------------------

WORDS = (
    "the a of to and in is for on with that this it as be by from at or are an not was "
    "token tokens password secret key keys auth session request response cache build test "
    "deploy config value error warning file path module function return import class self "
    "user agent model search index query result page limit offset cursor commit branch"
).split()


def sentence(rng: random.Random, n: int | None = None) -> str:
    words = [rng.choice(WORDS) for _ in range(n or rng.randint(6, 18))]
    return " ".join(words).capitalize() + rng.choice([".", ".", "?", ":"])


CODE_LINES = [
    'api_key = os.environ["OPENAI_API_KEY"]',
    'api_key = os.environ.get("ANTHROPIC_API_KEY")',
    "token = request.headers.get(\"Authorization\", \"\").removeprefix(\"Bearer \")",
    'password = getpass.getpass("Password: ")',
    "secret_key = settings.SECRET_KEY",
    "const apiKey = process.env.ANTHROPIC_API_KEY;",
    "headers: { Authorization: `Bearer ${token}` },",
    'headers = {"Authorization": f"Bearer {api_key}"}',
    'if not api_key: raise ValueError("missing api key")',
    "def verify_password(password: str, hashed: str) -> bool:",
    "token_count = len(tokenizer.encode(text))",
    "self.max_tokens = max_tokens",
    "client = Anthropic(api_key=api_key)",
    "PASSWORD_MIN_LENGTH = 12",
    "auth_token: Optional[str] = None",
    'SECRET_KEY = os.getenv("SECRET_KEY", "")',
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "token = jwt.encode(payload, secret, algorithm=\"HS256\")",
    "    if token is None or token.expired:",
    "for token in tokens: counts[token] += 1",
    "access_token = response.json()[\"access_token\"]",
    "private_key = load_pem_private_key(data, password=None)",
    "export OPENAI_API_KEY=\"sk-...\"",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "API_KEY=your-api-key-here",
    "password: ${DB_PASSWORD}",
    "DATABASE_URL=postgres://user:password@localhost:5432/app",
    "REDIS_URL=redis://localhost:6379/0",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $GITHUB_TOKEN",
    "curl -H \"Authorization: token $GH_TOKEN\" https://api.github.com/user",
    'token: "{{ .Values.token }}"',
    'api_key: "<YOUR_API_KEY>"',
    'password = "********"',
    "client_secret: xxxxxxxxxxxxxxxxxxxx",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "    tokenizer_name: meta-llama/Llama-3.1-8B-Instruct",
    '"max_tokens": 4096, "temperature": 0.2',
    "secretName: tls-cert-2024",
    "password_reset_url = reverse(\"password_reset\")",
    "PWD=/home/user/project",
    "OLDPWD=/home/user",
    "passport-local: ^1.0.0",
    "--password-store=basic",
    "git push -u origin feature/token-refresh",
    "pip install 'passlib[bcrypt]>=1.7.4'",
    "func (c *Client) Token() (string, error) {",
    "let secret = std::env::var(\"APP_SECRET\")?;",
    "ssh-keygen -t ed25519 -C \"deploy@example.test\" -f ~/.ssh/id_ed25519",
    "mysql -u root -p",
    "echo $AWS_SECRET_ACCESS_KEY | wc -c",
    "ask: task-runner-2024-build",
    "risk-score-model-v2-final-1234567890",
    "\"cache_creation_input_tokens\": 20517, \"cache_read_input_tokens\": 118272,",
    "Bearer tokens are described in RFC 6750.",
    "keyboard_layout: us-intl-2024",
    "monkey_patch_key_handler(event)",
    "primary_key=True, unique=True",
    "foreign_key: user_id_2",
    "key: value",
    "sort_key=lambda item: item[1]",
]


def git_lines(rng):
    sha = chars(rng, HEX, 40)
    return rng.choice([
        f"commit {sha}",
        f"{sha[:7]} {sentence(rng, 6)}",
        f"Merge: {chars(rng, HEX, 7)} {chars(rng, HEX, 7)}",
        f"index {chars(rng, HEX, 7)}..{chars(rng, HEX, 7)} 100644",
        f"Author: Dev {rng.randint(1, 99)} <dev{rng.randint(1, 99)}@example.test>",
        f"    git checkout {sha}",
    ])


def id_lines(rng):
    return rng.choice([
        f'"sessionId": "{fake_uuid(rng)}",',
        f'"parentUuid": "{fake_uuid(rng)}", "uuid": "{fake_uuid(rng)}"',
        f'"requestId": "req_011C{chars(rng, ALNUM, 20)}"',
        f'"id": "msg_01{chars(rng, ALNUM, 22)}"',
        f'"tool_use_id": "toolu_01{chars(rng, ALNUM, 22)}"',
        f'"call_id": "call_{chars(rng, ALNUM, 24)}"',
        f"trace_id={chars(rng, HEX, 32)} span_id={chars(rng, HEX, 16)}",
        f"container {chars(rng, HEX, 64)} started",
        f"pod/web-{chars(rng, HEX, 10)}-{chars(rng, 'bcdfghjklmnpqrstvwxz2456789', 5)} Running",
        f"ETag: \"{chars(rng, HEX, 32)}\"",
        f"X-Request-Id: {fake_uuid(rng)}",
    ])


def hash_lines(rng):
    return rng.choice([
        f'"integrity": "sha512-{b64(rng, 64)}",',
        f'"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.{rng.randint(0, 9)}.0.tgz",',
        f"sha256:{chars(rng, HEX, 64)}",
        f"    --hash=sha256:{chars(rng, HEX, 64)} \\",
        f"github.com/acme/lib v1.{rng.randint(0, 9)}.0 h1:{b64(rng, 32)}",
        f'checksum = "{chars(rng, HEX, 64)}"',
        f"ghcr.io/acme/api@sha256:{chars(rng, HEX, 64)}",
        f"{chars(rng, HEX, 32)}  dist/app-{rng.randint(1, 9)}.tar.gz",
    ])


def blob_lines(rng):
    return rng.choice([
        f"data:image/png;base64,{b64(rng, rng.randint(1500, 12000))}",
        f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{b64(rng, rng.randint(1500, 8000))}"}}}}',
        f'"signature": "{b64(rng, rng.randint(200, 600))}"',
        f'"encrypted_content": "gAAAAAB{b64url(rng.randbytes(rng.randint(300, 900)))}"',
        b64(rng, 57),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + b64(rng, 32)[:43] + " deploy@example.test",
    ])


def shell_lines(rng):
    return rng.choice([
        f"-rw-r--r--  1 dev staff  {rng.randint(100, 99999)} Mar {rng.randint(1, 28)} 10:{rng.randint(10, 59)} {rng.choice(['README.md', 'token.py', 'secrets.example.env', 'keys.ts'])}",
        f"tests/test_auth.py::test_token_refresh_{rng.randint(1, 40)} PASSED [{rng.randint(1, 99)}%]",
        f"added {rng.randint(1, 900)} packages, and audited {rng.randint(900, 2000)} packages in {rng.randint(1, 40)}s",
        f"Successfully installed httpx-0.{rng.randint(20, 28)}.0 pydantic-2.{rng.randint(1, 12)}.{rng.randint(0, 9)}",
        f"{chars(rng, HEX, 12)}   postgres:16   \"docker-entrypoint.s…\"   {rng.randint(2, 50)} minutes ago   Up   5432/tcp",
        f"dev  {rng.randint(100, 99999)}  0.{rng.randint(0, 9)}  1.{rng.randint(0, 9)} python -m http.server 8000",
        "On branch main\nYour branch is up to date with 'origin/main'.",
        f"/dev/nvme0n1p{rng.randint(1, 4)}  {rng.randint(50, 900)}G  {rng.randint(10, 400)}G  {rng.randint(10, 400)}G  {rng.randint(5, 95)}% /",
        "SHELL=/bin/bash\nTERM=xterm-256color\nLANG=en_US.UTF-8",
        f"SSH_AUTH_SOCK=/tmp/ssh-{chars(rng, ALNUM, 10)}/agent.{rng.randint(1000, 9999)}",
        f"https://github.com/acme/api/pull/{rng.randint(1, 9999)}",
        f"https://example.test/search?q=token+refresh&page={rng.randint(1, 9)}",
        f"https://auth.example.test/authorize?client_id={chars(rng, ALNUM, 20)}&state={chars(rng, ALNUM, 32)}&code_challenge={b64url(rng.randbytes(32))}",
        f"http://localhost:{rng.randint(3000, 9000)}/api/v1/items?id={rng.randint(1, 999)}",
        f"00000{rng.randint(0, 9)}0: {' '.join(chars(rng, HEX, 4) for _ in range(8))}  ................",
        f"color: #{chars(rng, HEX, 6)}; background: #{chars(rng, HEX, 6)};",
        f"2026-03-0{rng.randint(1, 9)}T10:00:0{rng.randint(0, 9)}Z INFO request_id={fake_uuid(rng)} latency_ms={rng.randint(1, 999)}",
        f'{{"input_tokens": {rng.randint(1, 99999)}, "output_tokens": {rng.randint(1, 9999)}}}',
    ])


def public_key_block(rng):
    label = rng.choice(["PUBLIC KEY", "CERTIFICATE", "RSA PUBLIC KEY"])
    return pem_block(rng, label, rng.randint(200, 900))


BENIGN_MAKERS = [
    (lambda rng: sentence(rng), 20),
    (lambda rng: rng.choice(CODE_LINES), 25),
    (git_lines, 10),
    (id_lines, 10),
    (hash_lines, 10),
    (blob_lines, 5),
    (shell_lines, 18),
    (public_key_block, 1),
]


def benign_documents(seed: int = 0, lines: int = 20_000, lines_per_document: int = 40) -> list[str]:
    """Benign documents (newline-joined), ``lines`` lines in total."""
    rng = random.Random(seed)
    makers = [maker for maker, weight in BENIGN_MAKERS for _ in range(weight)]
    documents, current, count = [], [], 0
    while count < lines:
        chunk = rng.choice(makers)(rng)
        current.append(chunk)
        count += chunk.count("\n") + 1
        if len(current) >= lines_per_document:
            documents.append("\n".join(current))
            current = []
    if current:
        documents.append("\n".join(current))
    return documents


# -- a corpus shaped like the text fields of agent logs -------------------------------------


def _code_file(rng):
    lines = [rng.choice(CODE_LINES) if rng.random() < 0.3 else _code_line(rng) for _ in range(rng.randint(20, 400))]
    return "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(lines))


def _code_line(rng):
    indent = "    " * rng.randint(0, 3)
    name = "_".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
    return rng.choice([
        f"{indent}def {name}(self, {rng.choice(WORDS)}: str) -> dict:",
        f"{indent}{name} = {rng.choice(WORDS)}.{rng.choice(WORDS)}({rng.randint(0, 99)})",
        f"{indent}return {{\"{rng.choice(WORDS)}\": {name}, \"count\": {rng.randint(0, 999)}}}",
        f"{indent}# {sentence(rng)}",
        f"{indent}if {name} is None:",
        f"{indent}    raise ValueError(\"{sentence(rng, 5)}\")",
        "",
    ])


def _shell_output(rng):
    return "\n".join(shell_lines(rng) if rng.random() < 0.7 else git_lines(rng) for _ in range(rng.randint(5, 200)))


def _message(rng):
    paragraphs = [" ".join(sentence(rng) for _ in range(rng.randint(2, 6))) for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.4:
        paragraphs.append("```python\n" + "\n".join(_code_line(rng) for _ in range(rng.randint(3, 25))) + "\n```")
    return "\n\n".join(paragraphs)


def _json_output(rng):
    items = [
        {"id": fake_uuid(rng), "name": sentence(rng, 3), "sha": chars(rng, HEX, 40),
         "tokens": rng.randint(1, 99999), "path": f"/srv/app/{rng.choice(WORDS)}.py"}
        for _ in range(rng.randint(3, 80))
    ]
    return json.dumps(items, indent=rng.choice([None, 2]))


def _short_field(rng):
    return rng.choice([
        fake_uuid(rng), f"2026-03-0{rng.randint(1, 9)}T10:{rng.randint(10, 59)}:00.000Z",
        f"/home/dev/src/{rng.choice(WORDS)}", rng.choice(["main", "feature/search", "fix/token-refresh"]),
        rng.choice(["claude-sonnet-4-5", "gpt-5-codex", "claude-opus-4-1"]), rng.choice(["Bash", "Read", "Edit", "Grep"]),
        f"git status && pytest -q tests/test_{rng.choice(WORDS)}.py",
    ])


FIELD_MAKERS = [
    (_short_field, 40),
    (_message, 25),
    (_code_file, 8),
    (_shell_output, 12),
    (_json_output, 8),
    (lambda rng: "\n".join(rng.choice(CODE_LINES) for _ in range(rng.randint(1, 30))), 5),
    (lambda rng: blob_lines(rng), 1),
]


def agent_log_texts(seed: int = 0, total_bytes: int = 30_000_000, secret_every: int = 300) -> list[str]:
    """String fields like those an ingester stores (ids, messages, code, shell and
    JSON output, a few base64 blobs), one in ``secret_every`` with a planted secret."""
    rng = random.Random(seed)
    makers = [maker for maker, weight in FIELD_MAKERS for _ in range(weight)]
    planted = labelled_samples(seed, per_context=1)
    texts, size = [], 0
    while size < total_bytes:
        if rng.randrange(secret_every) == 0:
            text = rng.choice(planted).text
        else:
            text = rng.choice(makers)(rng)
        texts.append(text)
        size += len(text)
    return texts
