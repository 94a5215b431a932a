"""The TTL controller's size bands: hysteresis so a cluster near a boundary keeps one value."""

from pyk8s.controllers.ttl import BANDS, next_band


def ttl(band: int) -> int:
    return BANDS[band][2]


def test_bands_move_up_past_the_upper_size_and_down_below_the_lower_one() -> None:
    assert ttl(next_band(0, 1)) == 0
    assert ttl(next_band(0, 100)) == 0
    up = next_band(0, 101)
    assert ttl(up) == 15
    assert ttl(next_band(up, 95)) == 15  # still above 90: no flip back
    assert ttl(next_band(up, 89)) == 0
    assert ttl(next_band(0, 5000)) == 300
    assert ttl(next_band(0, 20000)) == 600
    assert ttl(next_band(next_band(0, 20000), 0)) == 0
