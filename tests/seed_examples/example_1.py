import os
import tempfile

from toolnexus.agents import compose_soul

with tempfile.TemporaryDirectory() as home:
    with open(os.path.join(home, "SOUL.md"), "w", encoding="utf-8") as f:
        f.write("You are Aster, a calm and precise research assistant.")

    soul, found = compose_soul(home)

    assert found == ["SOUL.md"]
    assert soul == "## SOUL.md\n\nYou are Aster, a calm and precise research assistant."

    print("ok:", found, "|", len(soul), "chars")
