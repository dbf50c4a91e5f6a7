"""A tiny corpus shaped like GRAMMAR's Aurp: client documents plus one filler-heavy document."""

from __future__ import annotations

CORPUS: dict[str, str] = {
    "client-acme": (
        "**Acme Robotics**\n\nAcme Robotics is the name of a client in our system since 2019. "
        "Acme Robotics is headquartered in Oslo. "
        "The account manager for Acme Robotics is Ada Lovelace."
    ),
    "client-borealis": (
        "**Borealis Foods**\n\nBorealis Foods is the name of a client in our system since 2021. "
        "Borealis Foods is headquartered in Lima. "
        "The account manager for Borealis Foods is Grace Hopper."
    ),
    "client-cobalt": (
        "**Cobalt Mining**\n\nCobalt Mining is the name of a client in our system since 2020. "
        "Cobalt Mining is headquartered in Perth. "
        "The account manager for Cobalt Mining is Alan Turing."
    ),
    "records-policy": (
        "Please note that the name of each client in our system must be the one with which it "
        "was registered, specifically as it is written on the contract, and to whose records "
        "all requests are matched."
    ),
}

SHORT_ACME = "Acme Robotics headquarters city"
LONG_ACME = (
    "Please fetch the city corresponding to the client whose name matches with the client "
    "name in our system, specifically 'Acme Robotics'."
)
