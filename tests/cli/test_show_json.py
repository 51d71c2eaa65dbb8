"""show --json says when the request records are left out (issue 26): null, not []."""

import json

from tokcaliper.cli import main
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.store import Store


def test_requests_left_out_are_null_with_a_note(tmp_path, capsys):
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.05, e2e_s=1.0, output_tokens=10,
                          token_count_source="usage")]
    db = tmp_path / "t.db"
    with Store(db) as s:
        rid = s.save_run(Run(session="s", arm="a", started_at="2026-01-01T00:00:00.000Z",
                             finished_at="2026-01-01T00:00:01.000Z", command_line="tokcaliper bench",
                             tool_version="0.1.0", config=LoadConfig(base_url="http://x"),
                             metrics=summarize(recs), requests=recs))
    assert main(["show", str(rid), "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["requests"] is None and "--requests" in doc["requests_note"]
    assert main(["show", str(rid), "--db", str(db), "--json", "--requests"]) == 0
    assert len(json.loads(capsys.readouterr().out)["requests"]) == 1
