"""The raw SQL of the hot write path of items: the agent's lock, the slot's read, the
insert of a new state, and the layout's updates (``WriteSQL``), plus ``layout_slot`` and
``save_layout``, which read and save a slot's layout through them."""

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db import connections, router
from django.db.models.sql import InsertQuery

from cogitator_memory.grants import MemoryScope, exact_scope_sql, memory_scope_sql
from cogitator_memory.items.models import (
    Entity,
    MemoryItem,
)
from cogitator_memory.items.statements import Slot
from cogitator_memory.items.timeline import TIMELINE_STATUSES, SlotState, in_timeline, lay_out
from cogitator_memory.prepared import prepares_statements

AGENT_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


def agent_lock_key(agent_id: str) -> str:
    """The key of the advisory lock that serializes one agent's item writes."""
    return f"cogitator_memory.items:{agent_id}"


class WriteSQL:
    """The reads and the layout's updates of a write, written out as SQL.

    A write is the hottest path of items: through the ORM, compiling its statements and
    building model instances of the slot's states took longer than the database needed
    for the whole write (bench/RESULTS.md). Each reads what the ORM would: the same rows,
    in the same order, with the same locks, values converted as the ORM converts them."""

    ITEMS = MemoryItem._meta.db_table
    ENTITIES = Entity._meta.db_table

    @staticmethod
    def _connection() -> Any:
        return connections[router.db_for_write(MemoryItem)]

    @staticmethod
    def _binds_on_server(connection: Any) -> bool:
        """Whether the write's hot statements go through a cursor binding parameters on
        the server: on PostgreSQL when the connection binds on the server anyway
        (``server_side_binding``), or prepares statements (a ``prepare_threshold`` in
        ``OPTIONS``; Django's default, None, is for poolers in transaction mode) and
        queries are not logged (a logged statement shows as psycopg composed it, which
        a prepared one is not)."""
        if connection.vendor != "postgresql":
            return False
        if connection.settings_dict.get("OPTIONS", {}).get("server_side_binding"):
            return True
        return prepares_statements(connection) and not connection.queries_logged

    @classmethod
    def _hot_cursor(cls, connection: Any) -> Any:
        """A cursor for the statements every write sends (the slot's read, the insert).
        Where ``_binds_on_server``, it binds parameters on the server, so psycopg prepares
        each statement after ``prepare_threshold`` runs and the server parses and plans it
        once per connection (a quarter of a write's time); Django's cursor otherwise.
        Django wraps it either way, so execute wrappers see its statements."""
        if not cls._binds_on_server(connection):
            return connection.cursor()
        from django.db.backends.postgresql.base import ServerBindingCursor

        connection.ensure_connection()
        cursor = ServerBindingCursor(connection.connection)  # type: ignore[call-arg]
        return connection._prepare_cursor(cursor)

    LAYOUT_UPDATE = (
        f'UPDATE "{ITEMS}" SET "valid_to" = %s, "valid_to_known_at" = %s, "status" = %s'
        ' WHERE "id" = %s'
    )

    # The agent's last recorded time (an index on (agent, recorded_at) serves it).
    LAST_RECORDED = (
        f'SELECT "recorded_at" FROM "{ITEMS}" WHERE "agent_id" = %s'
        ' ORDER BY "recorded_at" DESC LIMIT 1'
    )

    @staticmethod
    def _datetime_converter(connection: Any) -> Callable[[Any], Any]:
        """A function converting a datetime read through a cursor as the ORM converts it
        (SQLite gives it naive, or as text from a subquery)."""
        column = MemoryItem._meta.get_field("recorded_at").cached_col
        converters = connection.ops.get_db_converters(column)

        def convert(value: Any) -> Any:
            for converter in converters:
                value = converter(value, column, connection)
            return value

        return convert

    @classmethod
    def _datetime(cls, value: Any, connection: Any) -> Any:
        return cls._datetime_converter(connection)(value)

    @classmethod
    def last_recorded(cls, agent_id: str) -> datetime | None:
        connection = cls._connection()
        with connection.cursor() as cursor:
            cursor.execute(cls.LAST_RECORDED, [agent_id])
            row = cursor.fetchone()
        return cls._datetime(row[0], connection) if row else None

    # What a write reads of a slot's states, in the order of ``SlotState``'s fields.
    STATE_COLUMNS = (
        "id",
        "status",
        "valid_from",
        "valid_to",
        "valid_to_known_at",
        "ends_at",
        "recorded_at",
        "value",
        "kind",
        "trust",
        "confidence",
        "activated_at",
    )
    STATE_MOMENTS = frozenset(
        {"valid_from", "valid_to", "valid_to_known_at", "ends_at", "recorded_at", "activated_at"}
    )

    @classmethod
    def entity_and_slot(
        cls,
        scope: MemoryScope,
        key: str,
        attribute: str,
        statuses: Sequence[str],
        *,
        locking: bool = False,
    ) -> tuple[list[Entity], datetime | None, dict[str, list[SlotState]]]:
        """The entities of this key the scope sees (``MemoryItems._entities_named``), the
        agent's last recorded time, and each entity's states of ``statuses`` in the slot of
        ``attribute`` in the exact scope, in timeline order: one statement (the time on
        its own when no entity matches).

        The states are not locked row by row: every change of a slot's layout (a write, a
        review, forgetting) holds the agent's lock. ``locking`` takes it first: on
        PostgreSQL with parameters bound by the driver (Django's default), as a statement
        of its own sent with the read (each statement of a query string takes its own
        snapshot, so the read sees what the writer it waited for committed); otherwise
        as a statement before it."""
        connection = cls._connection()
        lock_first = locking and connection.vendor == "postgresql"
        # Parameters bound on the server allow one statement per execute.
        in_one_trip = lock_first and not cls._binds_on_server(connection)
        if lock_first and not in_one_trip:
            with cls._hot_cursor(connection) as cursor:
                cursor.execute(AGENT_LOCK, [agent_lock_key(scope.agent_id)])
        in_scope, scope_params = exact_scope_sql(scope, table="i")
        marks = ", ".join(["%s"] * len(statuses))
        joined = " AND ".join(
            ['i."subject_id" = e."id"', 'i."attribute" = %s', *in_scope, f'i."status" IN ({marks})']
        )
        # The entities the scope names subjects by: the rule of ``memory_scope_q``.
        seen, seen_params = memory_scope_sql(scope, table="e")
        entity_fields = Entity._meta.concrete_fields
        entity_columns = ", ".join(f'e."{field.column}"' for field in entity_fields)
        state_columns = ", ".join(f'i."{name}"' for name in cls.STATE_COLUMNS)
        params: list[Any] = [scope.agent_id, attribute, *scope_params, *statuses]
        params += [*seen_params, key]
        read = (
            f"SELECT ({cls.LAST_RECORDED}), {entity_columns}, {state_columns}"
            f' FROM "{cls.ENTITIES}" e LEFT JOIN "{cls.ITEMS}" i ON {joined}'
            f' WHERE {" AND ".join(seen)} AND e."key" = %s'
            ' ORDER BY e."id", i."valid_from", i."recorded_at", i."id"'
        )
        with cls._hot_cursor(connection) as cursor:
            if in_one_trip:
                cursor.execute(f"{AGENT_LOCK}; {read}", [agent_lock_key(scope.agent_id), *params])
                cursor.nextset()
            else:
                cursor.execute(read, params)
            rows = cursor.fetchall()
        if not rows:
            return [], cls.last_recorded(scope.agent_id), {}
        # A plain cursor: the rows repeat each entity once per state, and building a model
        # instance per row (as a raw queryset does) cost more than the statement.
        width = len(entity_fields)
        pk_at = entity_fields.index(Entity._meta.pk)
        moment = cls._datetime_converter(connection)
        converters = [moment if name in cls.STATE_MOMENTS else None for name in cls.STATE_COLUMNS]
        entities: dict[str, Entity] = {}
        slots: dict[str, list[SlotState]] = {}
        for row in rows:
            entity_values, state_values = row[1 : 1 + width], row[1 + width :]
            entity_id = entity_values[pk_at]
            if entity_id not in entities:
                entities[entity_id] = cls._entity(entity_fields, entity_values, connection)
            states = slots.setdefault(entity_id, [])
            if state_values[0] is None:
                continue
            states.append(
                SlotState(
                    *(
                        value if convert is None else convert(value)
                        for convert, value in zip(converters, state_values, strict=True)
                    )
                )
            )
        return list(entities.values()), moment(rows[0][0]), slots

    @staticmethod
    def _entity(fields: Sequence[Any], values: Sequence[Any], connection: Any) -> Entity:
        """An entity from its columns, each value converted as the ORM converts it."""
        converted = []
        for model_field, value in zip(fields, values, strict=True):
            column = model_field.cached_col
            for converter in [
                *connection.ops.get_db_converters(column),
                *column.get_db_converters(connection),
            ]:
                value = converter(value, column, connection)
            converted.append(value)
        return Entity.from_db(connection.alias, [f.attname for f in fields], converted)

    # The INSERT of a new state, as the ORM compiles it, per database alias: its text
    # depends on the model and the backend only, and compiling it cost a tenth of a write.
    _insert_sql: dict[str, str] = {}

    @classmethod
    def insert_statement(cls, item: MemoryItem, connection: Any) -> tuple[str, list[Any]]:
        """The statement inserting ``item`` and its parameters, as ``bulk_create`` of the
        one item would send them (the text compiled once per alias)."""
        fields = MemoryItem._meta.concrete_fields
        sql = cls._insert_sql.get(connection.alias)
        if sql is None:
            query = InsertQuery(MemoryItem)
            query.insert_values(fields, [item])
            [(sql, params)] = query.get_compiler(connection=connection).as_sql()
            cls._insert_sql[connection.alias] = sql
            return sql, list(params)
        return sql, [
            field.get_db_prep_save(field.pre_save(item, True), connection=connection)
            for field in fields
        ]

    @classmethod
    def insert_laid_out(
        cls, item: MemoryItem, changed: list[SlotState | MemoryItem]
    ) -> list[SlotState | MemoryItem]:
        """Insert a new state, and on PostgreSQL save the states its layout changed in the
        same statement (one round trip instead of one per statement). Returns the changed
        states still to save. Like ``bulk_create``, it sends no model signals."""
        connection = cls._connection()
        if connection.vendor != "postgresql" or not changed:
            MemoryItem.objects.bulk_create([item])
            return changed
        insert, insert_params = cls.insert_statement(item, connection)
        adapt = connection.ops.adapt_datetimefield_value
        updates, params = [], []
        for number, state in enumerate(changed):
            updates.append(f"closed_{number} AS ({cls.LAYOUT_UPDATE})")
            params += [
                adapt(state.valid_to),
                adapt(state.valid_to_known_at),
                state.status,
                state.pk,
            ]
        item._state.adding = False
        item._state.db = connection.alias
        with cls._hot_cursor(connection) as cursor:
            cursor.execute(f"WITH {', '.join(updates)} {insert}", [*params, *insert_params])
        return []

    @classmethod
    def slot_states(
        cls, slot: Slot, scope: MemoryScope, statuses: Sequence[str]
    ) -> list[SlotState]:
        """The states of ``statuses`` of a slot in one exact scope, in timeline order
        (``ItemQuerySet.in_timeline_order``), their rows locked until the transaction ends."""
        connection = cls._connection()
        in_scope, scope_params = exact_scope_sql(scope)
        conditions = ['"subject_id" = %s', '"attribute" = %s', *in_scope]
        params: list[Any] = [slot.subject_id, slot.attribute, *scope_params]
        conditions.append(f'"status" IN ({", ".join(["%s"] * len(statuses))})')
        params += list(statuses)
        # SQLite: the IMMEDIATE transaction holds the database's write lock already.
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        columns = ", ".join(f'"{name}"' for name in cls.STATE_COLUMNS)
        with connection.cursor() as cursor:
            cursor.execute(
                f'SELECT {columns} FROM "{cls.ITEMS}" WHERE {" AND ".join(conditions)}'
                f' ORDER BY "valid_from", "recorded_at", "id"{lock}',
                params,
            )
            rows = cursor.fetchall()
        moment = cls._datetime_converter(connection)
        converters = [moment if name in cls.STATE_MOMENTS else None for name in cls.STATE_COLUMNS]
        return [
            SlotState(
                *(
                    value if convert is None else convert(value)
                    for convert, value in zip(converters, row, strict=True)
                )
            )
            for row in rows
        ]


def layout_slot(
    slot: Slot, scope: MemoryScope, *, known_at: datetime
) -> list[SlotState | MemoryItem]:
    """Lay the slot's timeline out again in one exact scope (``lay_out``) and save the
    states it changed. Returns them."""
    states = WriteSQL.slot_states(slot, scope, TIMELINE_STATUSES)
    changed = lay_out([state for state in states if in_timeline(state)], known_at)
    save_layout(changed)
    return changed


def save_layout(changed: Iterable[SlotState | MemoryItem]) -> None:
    """Save what ``lay_out`` changed. Usually one state (the one before a new state): an
    UPDATE each costs less than one bulk CASE statement."""
    connection = WriteSQL._connection()
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for state in changed:
            cursor.execute(
                WriteSQL.LAYOUT_UPDATE,
                [adapt(state.valid_to), adapt(state.valid_to_known_at), state.status, state.pk],
            )
