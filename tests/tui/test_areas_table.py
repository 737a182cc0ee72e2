"""The side panel's Areas table: the name, last, is shortened to the room the other columns leave
it, or left out when there is almost none; the table never scrolls sideways."""

from __future__ import annotations

from textual.app import App, ComposeResult

from app.tui.widgets.side_panel import AreasTable
from engine.agent.views import AreaView
from engine.context import AreaFlowState, AreaLifeState

LONG = "deploy the new build at noon today and check the dashboards afterwards"
AREAS = (
    AreaView(
        id="notice#1",
        kind="notice",
        name=LONG,
        life=AreaLifeState.retired,
        flow=AreaFlowState.yielded,
        earliest=1,
        latest=1,
        cursor=False,
    ),
    AreaView(
        id="subtask#2",
        kind="subtask",
        name="fix the build",
        life=AreaLifeState.retain,
        flow=AreaFlowState.exclusive,
        earliest=2,
        latest=2,
        cursor=True,
    ),
)


class TableApp(App[None]):
    CSS = "AreasTable { width: 50%; height: auto; overflow-x: hidden; }"

    def compose(self) -> ComposeResult:
        yield AreasTable()


def names(table: AreasTable) -> list[str] | None:
    """The name cells, or None when the table has no name column."""
    labels = [column.label.plain for column in table.ordered_columns]
    if "name" not in labels:
        return None
    return [str(table.get_row_at(row)[labels.index("name")]) for row in range(table.row_count)]


def fits(table: AreasTable) -> bool:
    width = sum(column.get_render_width(table) for column in table.ordered_columns)
    return width <= table.scrollable_content_region.width


async def test_the_name_is_shortened_to_the_room_left_and_follows_the_width() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 10)) as pilot:
        table = app.query_one(AreasTable)
        table.show(AREAS)
        await pilot.pause()
        shown = names(table)
        assert shown is not None
        assert shown[0].endswith("…")
        assert LONG.startswith(shown[0][:-1])
        assert shown[1] == "fix the build"
        assert fits(table)
        await pilot.resize_terminal(200, 10)
        await pilot.pause()
        wider = names(table)
        assert wider is not None
        assert len(wider[0]) > len(shown[0])
        assert fits(table)
        await pilot.resize_terminal(400, 10)
        await pilot.pause()
        assert names(table) == [LONG, "fix the build"]


async def test_with_almost_no_room_the_name_column_is_left_out() -> None:
    app = TableApp()
    async with app.run_test(size=(88, 10)) as pilot:
        table = app.query_one(AreasTable)
        table.show(AREAS)
        await pilot.pause()
        assert names(table) is None
        assert [column.label.plain for column in table.ordered_columns] == [
            " ",
            "id",
            "range",
            "life",
            "flow",
        ]
        assert fits(table)
        await pilot.resize_terminal(120, 10)
        await pilot.pause()
        assert names(table) is not None
        assert fits(table)


async def test_a_column_narrows_again_when_its_widest_cell_goes() -> None:
    app = TableApp()
    async with app.run_test(size=(200, 10)) as pilot:
        table = app.query_one(AreasTable)
        table.show(AREAS)
        await pilot.pause()
        wide = [column.get_render_width(table) for column in table.ordered_columns]
        table.show(AREAS[:1])  # "subtask#2" and "exclusive" were the widest id and flow
        await pilot.pause()
        narrow = [column.get_render_width(table) for column in table.ordered_columns]
        assert narrow[1] < wide[1]
        assert narrow[4] < wide[4]


async def test_on_a_narrow_panel_flow_then_range_are_left_out_so_the_rest_fit() -> None:
    """F2 at 80 columns: the panel is some 30 columns, where the table was cut at the edge."""
    app = TableApp()
    async with app.run_test(size=(66, 10)) as pilot:
        table = app.query_one(AreasTable)
        table.show(AREAS)
        await pilot.pause()
        assert [column.label.plain for column in table.ordered_columns] == [
            " ",
            "id",
            "range",
            "life",
        ]
        assert fits(table)
        await pilot.resize_terminal(50, 10)
        await pilot.pause()
        assert [column.label.plain for column in table.ordered_columns] == [" ", "id", "life"]
        assert fits(table)
        await pilot.resize_terminal(88, 10)
        await pilot.pause()
        assert "flow" in [column.label.plain for column in table.ordered_columns]
