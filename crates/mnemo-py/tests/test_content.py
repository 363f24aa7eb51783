"""Content parts in Python: a message's ``content`` may be a list of OpenAI-style parts (what
LangChain's ``HumanMessage(content=[...])`` and the OpenAI SDK send). Text parts are joined in
order; an image part without a vision model, and an unknown part type, raise
``InvalidInputError`` naming the part's index, and nothing is written."""

from __future__ import annotations

import pytest

from mnemo import InvalidInputError, Memory


def test_text_parts_are_joined_in_order(mem: Memory) -> None:
    out = mem.add(
        [
            {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "I moved to Oslo"},
                {"type": "text", "text": "in May"},
            ]},
        ],
        user_id="ana",
        infer=False,
    )
    assert [r["memory"] for r in out["results"]] == ["I moved to Oslo\nin May"]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
        {"type": "image_url", "image_url": "https://example.org/cat.png"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
        {"text": "a part without a type"},
    ],
)
def test_parts_no_add_takes_are_refused_by_index(mem: Memory, part: dict) -> None:
    with pytest.raises(InvalidInputError) as e:
        mem.add(
            [{"role": "user", "content": [{"type": "text", "text": "look"}, part]}],
            user_id="ana",
            infer=False,
        )
    assert "messages[0].content[1]" in str(e.value)
    assert mem.get_all(user_id="ana")["results"] == []


def test_content_of_the_wrong_type_is_a_type_error(mem: Memory) -> None:
    with pytest.raises(TypeError) as e:
        mem.add([{"role": "user", "content": 42}], user_id="ana", infer=False)
    assert "messages[0].content" in str(e.value)
