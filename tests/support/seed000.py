"""seeds/000's Shannon card as the projection tests read it: its figures at two power-on
times (shannon-status -p at 9 h 15 min, -a at 21 h 9 min), a reading and a history of them."""

from __future__ import annotations

from agent.history import History
from collectors.model import DriveReading, Projection

GB = 10**9
TB = 10**12
DAY = 86400.0
YEAR = 365 * DAY
T0 = 1_700_000_000.0

# seeds/000 figures, from shannon-status -p at 9 h 15 min
# (fixtures/shannon/seed000__status-p_scta_9h.txt) and shannon-status -a at 21 h 9 min
# (fixtures/shannon/seed000__status-a_21h_body.txt).
SHANNON_MODEL = "sh-shannon-pcie-ssd"
SHANNON_SERIAL = "006819246149b014"
SHANNON_CAPACITY = 1200 * GB
EARLY = {"poh": 9 * 3600 + 15 * 60, "host": 13801.32, "nand": 20001.57, "wa": 1.4493}
LATE = {"poh": 21 * 3600 + 9 * 60, "host": 41516.25, "nand": 48235.25, "wa": 1.1618}


def shannon_reading(figures) -> DriveReading:
    return DriveReading(
        kind="shannon",
        device="/dev/scta",
        serial=SHANNON_SERIAL,
        model=SHANNON_MODEL,
        capacity_bytes=SHANNON_CAPACITY,
        life_left_ratio=0.99,
        host_written_bytes=int(round(figures["host"] * GB)),
        nand_written_bytes=int(round(figures["nand"] * GB)),
        write_amplification=figures["wa"],
        power_on_seconds=figures["poh"],
    )


def shannon_history() -> History:
    history = History(None, clock=lambda: T0 + LATE["poh"])
    for figures in (EARLY, LATE):
        history.record(SHANNON_SERIAL, T0 + figures["poh"], shannon_reading(figures))
    return history


def days_from(projection: Projection, now: float) -> float:
    assert projection.wearout_timestamp is not None, projection.note
    return (projection.wearout_timestamp - now) / DAY
