"""The hostile corpus both stores' search tests share: (prompt, reply) pairs.

Japanese, Chinese and Korean inside sentences, paths, code, punctuation, quotes, full-width
and compatibility characters, case that folds to more characters, emoji, and text that
looks like FTS5 query syntax.
"""

from __future__ import annotations

CORPUS = [
    ("エージェントの設計を保存した", "セッションログは追記のみで、変更できません。"),
    ("会话日志是权威的真实来源", "搜索从日志派生的索引中查找，不受压缩影响。"),
    ("open config.yaml and src/app/main.py", "Edit `templates/kestrel.md`: line 42, col 7."),
    ("def parse(x: int) -> dict[str, Any]:", "return {'key': x ** 2, \"q\": None}  # done"),
    ("Wait... what?! (yes/no) — maybe; 50% off", "Quotes: “curly” and 'plain' & <tags/>"),
    ("ＡＢＣ全角 and ﾊﾝｶｸ half-width", "ﬁle ligature, Straße, ΣΊΣΥΦΟΣ, İstanbul"),
    ("한국어 텍스트 검색 테스트", "emoji 🚀 launch 🎉 done, tab\there"),
    ('NEAR(alpha, beta) AND col:val OR "x"', "C:\\Users\\me\\file.txt and /etc/hosts"),
]
