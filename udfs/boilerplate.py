"""Line-level post-filter for what main-content extraction leaves behind (navigation, cookie banners).

Only short lines are judged: a long line is prose even when it mentions cookies.
"""
from __future__ import annotations

import re

SHORT_LINE_CHARS = 120
_BOILERPLATE = re.compile(
    r"""^(?:
        .*\b(?:cookies?|cookie\ policy|privacy\ policy|terms\ of\ (?:use|service))\b.*
      | (?:©|\(c\)|copyright\b).*
      | .*\ball\ rights\ reserved\b.*
      | (?:skip\ to\ (?:main\ )?content|back\ to\ top|toggle\ navigation|main\ menu|menu)
      | (?:share|share\ this|tweet|print|email|subscribe|sign\ in|log\ ?in|sign\ up|register)(?:\ (?:on|to|this|article|page).*)?
      | (?:read\ more|continue\ reading|click\ here).*
      | (?:follow\ us|like\ us)\b.*
      | (?:advertisement|sponsored(?:\ content)?)
    )$""",
    re.I | re.X,
)
# Breadcrumbs and link bars: short items joined by separators ("Home | News | Sport", "Home > Blog").
_LINK_BAR = re.compile(r"^(?:[^|»>›•·/]{1,30}\s*[|»>›•·/]\s*){2,}[^|»>›•·/]{0,30}$")


def is_boilerplate_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped or len(stripped) > SHORT_LINE_CHARS:
        return False
    return bool(_BOILERPLATE.match(stripped) or _LINK_BAR.match(stripped))


def drop_boilerplate_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not is_boilerplate_line(line))
