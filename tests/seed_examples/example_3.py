import os
import tempfile

from toolnexus.agents import compose_soul

CAP = 2 * 1024 * 1024  # MAX_BOOTSTRAP_FILE_BYTES

with tempfile.TemporaryDirectory() as home:
    oversized_path = os.path.join(home, "AGENTS.md")
    with open(oversized_path, "wb") as f:
        f.write(b"x" * (CAP + 1024))  # 1 KB over the cap

    with open(os.path.join(home, "SOUL.md"), "w", encoding="utf-8") as f:
        f.write("You are Aster.")

    soul, found = compose_soul(home)

    assert found == ["AGENTS.md", "SOUL.md"]
    assert "[truncated: exceeds 2 MB bootstrap cap]" in soul
    # The on-disk file is untouched — still oversized.
    assert os.path.getsize(oversized_path) == CAP + 1024

    print("ok: truncated at", CAP, "bytes; found", found)
