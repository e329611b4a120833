"""The task families of ``experience_replay.py``: apps, intents, descriptions with
their paraphrases, slot values and each family's true path (the steps that do it)."""

from __future__ import annotations

from typing import Any

FAMILIES: list[dict[str, Any]] = [
    {
        "app": "taobao",
        "intent": "shopping",
        "describe": ["search {item} on Taobao and order it"],
        "paraphrase": [
            "find {item} on Taobao and buy it",
            "On Taobao, look up {item} and order it",
        ],
        "slots": {"item": ["iPhone 15", "AirPods", "a yoga mat", "running shoes", "a desk lamp"]},
        "path": [
            ("open_app", {"app": "taobao"}),
            ("tap", {"target": "search box"}),
            ("input", {"text": "{item}"}),
            ("tap", {"target": "first result"}),
            ("tap", {"target": "buy now"}),
            ("confirm", {"target": "place order"}),
        ],
        "changed": ("tap", {"target": "purchase"}),  # the new version renamed "buy now"
    },
    {
        "app": "wechat",
        "intent": "social",
        "describe": ["send {message} to {contact} on WeChat"],
        "paraphrase": [
            "on WeChat, tell {contact} {message}",
            "message {contact} on WeChat: {message}",
        ],
        "slots": {
            "contact": ["Alice", "Bob", "Chen Wei", "Dana"],
            "message": ["see you at six", "the report is ready", "happy birthday"],
        },
        "path": [
            ("open_app", {"app": "wechat"}),
            ("tap", {"target": "search"}),
            ("input", {"contact": "{contact}"}),
            ("tap", {"target": "first contact"}),
            ("input", {"message": "{message}"}),
            ("tap", {"target": "send"}),
        ],
    },
    {
        "app": "maps",
        "intent": "navigation",
        "describe": ["navigate to {place} with the maps app"],
        "paraphrase": [
            "get directions to {place} in the maps app",
            "take me to {place} using maps",
        ],
        "slots": {"place": ["the airport", "Central Station", "the city library", "Pier 39"]},
        "path": [
            ("open_app", {"app": "maps"}),
            ("tap", {"target": "search here"}),
            ("input", {"destination": "{place}"}),
            ("tap", {"target": "first suggestion"}),
            ("tap", {"target": "directions"}),
            ("tap", {"target": "start"}),
        ],
    },
    {
        "app": "spotify",
        "intent": "entertainment",
        "describe": ["play {song} on Spotify"],
        "paraphrase": ["put on {song} in Spotify", "on Spotify, start playing {song}"],
        "slots": {"song": ["Yellow", "Bohemian Rhapsody", "Clair de Lune", "Blinding Lights"]},
        "path": [
            ("open_app", {"app": "spotify"}),
            ("tap", {"target": "search tab"}),
            ("input", {"query": "{song}"}),
            ("tap", {"target": "top result"}),
            ("tap", {"target": "play"}),
        ],
    },
    {
        "app": "calendar",
        "intent": "productivity",
        "describe": ["add {event} on {date} to my calendar"],
        "paraphrase": ["put {event} in my calendar for {date}", "schedule {event} on {date}"],
        "slots": {
            "event": ["dentist appointment", "team lunch", "flight to Berlin"],
            "date": ["Friday", "June 3", "next Monday"],
        },
        "path": [
            ("open_app", {"app": "calendar"}),
            ("tap", {"target": "new event"}),
            ("input", {"title": "{event}"}),
            ("input", {"date": "{date}"}),
            ("tap", {"target": "save"}),
        ],
    },
    {
        "app": "jd",
        "intent": "shopping",
        "describe": ["buy {item} on JD"],
        "paraphrase": ["order {item} from JD", "on JD, purchase {item}"],
        "slots": {
            "item": ["a phone charger", "green tea", "a keyboard", "noise cancelling headphones"]
        },
        "path": [
            ("open_app", {"app": "jd"}),
            ("input", {"keyword": "{item}"}),
            ("tap", {"target": "search"}),
            ("tap", {"target": "first item"}),
            ("tap", {"target": "add to cart"}),
            ("confirm", {"target": "checkout"}),
        ],
    },
]
DETOURS = ("settings", "sponsored banner", "notifications", "profile", "help")
