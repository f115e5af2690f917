import os
import tempfile

from toolnexus.agents import compose_soul

with tempfile.TemporaryDirectory() as home:
    # Write MEMORY.md first on disk — BOOTSTRAP_ORDER still wins over write order.
    with open(os.path.join(home, "MEMORY.md"), "w", encoding="utf-8") as f:
        f.write("- prefers metric units\n- last project: rag_go")
    with open(os.path.join(home, "AGENTS.md"), "w", encoding="utf-8") as f:
        f.write("Always cite your sources.")
    with open(os.path.join(home, "SOUL.md"), "w", encoding="utf-8") as f:
        f.write("You are Aster.")

    soul, found = compose_soul(home)

    assert found == ["AGENTS.md", "SOUL.md", "MEMORY.md"]  # bootstrap order, not write order
    assert soul.index("## AGENTS.md") < soul.index("## SOUL.md") < soul.index("## MEMORY.md")
    assert "prefers metric units" in soul
    # IDENTITY.md / USER.md / TOOLS.md / HEARTBEAT.md were never written — no sections, no error.
    assert "## IDENTITY.md" not in soul

    print("ok:", found)
