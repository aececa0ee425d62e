"""API keys: who may read, write, delete or administer which chats.

A key is shown once, at creation (``msk_<key id>_<secret>``); only its SHA-256 is stored, in
``<data dir>/keys.db``. Each key carries scopes (``read``, ``write``, ``delete``, ``admin``; ``admin`` implies
the other three and may read the audit log) and the chats it reaches: exact chat ids, chat-id prefixes (a
tenant, e.g. ``acme:``) or every chat (``*``). :class:`Principal` and :func:`parse_token` are pure;
:class:`KeyStore` is the thin SQLite adapter (``memstream keys …`` and the API's auth gate use it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from streams.log import DurableSQLite

Scope = Literal["read", "write", "delete", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "write", "delete", "admin")
ALL_CHATS = "*"
TOKEN_PREFIX = "msk_"
_TOKEN = re.compile(r"^msk_([0-9a-f]{12})_([A-Za-z0-9_-]{20,64})$")


class Principal(BaseModel):
    """Who is calling and what they may touch. ``key_id`` is ``anonymous`` when the API runs without keys."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    name: str = ""
    scopes: frozenset[Scope] = frozenset()
    chats: frozenset[str] = frozenset()  # exact chat ids; "*" = every chat
    prefixes: tuple[str, ...] = ()  # chat-id prefixes (a tenant)

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def reaches(self, chat_id: str) -> bool:
        return ALL_CHATS in self.chats or chat_id in self.chats or chat_id.startswith(self.prefixes)

    def may(self, scope: Scope, chat_id: str | None = None) -> bool:
        """``scope`` on ``chat_id`` (None: the scope alone, e.g. an admin-only endpoint)."""
        return self.has(scope) and (chat_id is None or self.reaches(chat_id))

    def visible(self, chat_ids: list[str]) -> list[str]:
        """The chats of ``chat_ids`` this key may read (e.g. a chat list in a UI)."""
        return [c for c in chat_ids if self.may("read", c)]


ANONYMOUS = Principal(key_id="anonymous", name="no keys configured", scopes=frozenset(SCOPES),
                      chats=frozenset({ALL_CHATS}))


class KeyInfo(BaseModel):
    """A stored key, without its secret."""

    key_id: str
    name: str
    scopes: list[Scope]
    chats: list[str] = Field(default_factory=list)
    prefixes: list[str] = Field(default_factory=list)
    created_at: datetime
    revoked_at: datetime | None = None

    def principal(self) -> Principal:
        return Principal(key_id=self.key_id, name=self.name, scopes=frozenset(self.scopes),
                         chats=frozenset(self.chats), prefixes=tuple(self.prefixes))


def hash_secret(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def parse_token(token: str) -> str | None:
    """The key id of a well-formed token, else None (nothing is looked up for garbage)."""
    m = _TOKEN.match(token.strip())
    return m[1] if m else None


def new_token() -> tuple[str, str]:
    """A fresh (key id, token)."""
    key_id = secrets.token_hex(6)
    return key_id, f"{TOKEN_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
  key_id TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, name TEXT NOT NULL, scopes TEXT NOT NULL,
  chats TEXT NOT NULL, prefixes TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT);
"""


class KeyStore(DurableSQLite):
    """``<data dir>/keys.db``: key id, SHA-256 of the token, name, scopes, chats, prefixes, revocation."""

    schema = _SCHEMA

    def create(self, name: str, scopes: list[Scope], chats: list[str], prefixes: list[str]) -> tuple[KeyInfo, str]:
        """Store a new key; returns it and its token (shown once, never stored)."""
        if not scopes:
            raise ValueError("a key needs at least one scope (read, write, delete, admin)")
        if not chats and not prefixes:
            raise ValueError("a key needs chats (--chat ID, or --chat '*' for every chat) or a --prefix")
        if any(not p for p in prefixes):
            raise ValueError("a prefix must not be empty (use --chat '*' for every chat)")
        key_id, token = new_token()
        info = KeyInfo(key_id=key_id, name=name, scopes=sorted(set(scopes)), chats=sorted(set(chats)),
                       prefixes=sorted(set(prefixes)), created_at=datetime.now(UTC))
        self.db.execute(
            "INSERT INTO api_keys VALUES (?,?,?,?,?,?,?,NULL)",
            (key_id, hash_secret(token), name, json.dumps(info.scopes), json.dumps(info.chats),
             json.dumps(info.prefixes), info.created_at.isoformat()),
        )
        return info, token

    def revoke(self, key_id: str) -> bool:
        cur = self.db.execute("UPDATE api_keys SET revoked_at=? WHERE key_id=? AND revoked_at IS NULL",
                              (datetime.now(UTC).isoformat(), key_id))
        return cur.rowcount > 0

    def list_keys(self, *, include_revoked: bool = False) -> list[KeyInfo]:
        rows = self.db.execute("SELECT key_id, name, scopes, chats, prefixes, created_at, revoked_at "
                               "FROM api_keys ORDER BY created_at").fetchall()
        keys = [KeyInfo(key_id=k, name=n, scopes=json.loads(s), chats=json.loads(c), prefixes=json.loads(p),
                        created_at=datetime.fromisoformat(at), revoked_at=datetime.fromisoformat(r) if r else None)
                for k, n, s, c, p, at, r in rows]
        return [k for k in keys if include_revoked or k.revoked_at is None]

    def active(self) -> dict[str, tuple[str, Principal]]:
        """key id -> (secret hash, principal) of every key not revoked (the auth gate's cache)."""
        hashes = dict(self.db.execute("SELECT key_id, secret_hash FROM api_keys WHERE revoked_at IS NULL"))
        return {k.key_id: (hashes[k.key_id], k.principal()) for k in self.list_keys() if k.key_id in hashes}


def match_key(prefix: str, keys: list[KeyInfo]) -> KeyInfo:
    """The one key of ``keys`` whose id starts with ``prefix`` (an id in full, or as much of it as tells it
    apart); ValueError naming the candidates when none or several match."""
    prefix = prefix.strip()
    if not prefix:
        raise ValueError("which key? give its id (or the start of it) from `memstream keys list`")
    exact = [k for k in keys if k.key_id == prefix]
    found = exact or [k for k in keys if k.key_id.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not found:
        known = ", ".join(k.key_id for k in keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
        raise ValueError(f"no key id starts with {prefix!r} (keys: {known or 'none'})")
    ids = ", ".join(k.key_id for k in found)
    raise ValueError(f"{prefix!r} is the start of {len(found)} key ids ({ids}); give more of the id")


def check(token: str, active: dict[str, tuple[str, Principal]]) -> Principal | None:
    """The principal of ``token`` if it is a live key (constant-time comparison of the hashes)."""
    key_id = parse_token(token)
    entry = active.get(key_id) if key_id else None
    if entry is None or not hmac.compare_digest(entry[0], hash_secret(token)):
        return None
    return entry[1]


def is_loopback(host: str) -> bool:
    import ipaddress

    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_refusal(host: str, mode: str, active_keys: int, allow_no_keys: bool) -> str | None:
    """Why ``serve`` must not start on ``host`` (None: fine). Off loopback, keys are required unless the
    operator said otherwise."""
    if is_loopback(host) or allow_no_keys:
        return None
    if mode == "off":
        return (f"refusing to serve on {host} with authentication off (MEMSTREAM_SERVE__AUTH=off); pass "
                "--allow-no-keys if this network is trusted")
    if active_keys == 0:
        return (f"refusing to serve on {host} without API keys: anyone who can reach it could read or delete "
                "every chat. Create one (`memstream keys create --name NAME --scope read --chat CHAT`), or pass "
                "--allow-no-keys if this network is trusted")
    return None
