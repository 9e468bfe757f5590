"""Options several commands share."""

import click

from tokenmap.encoders.choice import ENCODERS

encoder_option = click.option(
    "--encoder", type=click.Choice(ENCODERS), default="auto", show_default=True,
    help="The engine that encodes the audio (the decoder is always CTranslate2). auto: whichever of CTranslate2 "
         "and the OpenVINO precisions this CPU runs measured fastest here at each audio length: f32, int8 "
         "weights, bf16 (AMX or AVX512_BF16), int8-full (weights and activations; AVX512_VNNI, AVX-VNNI or "
         "AMX). Measured once, about 10 s, plus about a minute the first time the int8-full encoder is built; "
         "`tokenmap calibrate --encoder` measures again. openvino: OpenVINO at its fastest measured precision "
         "(openvino:bf16|f32|int8|int8-full to force one). ctranslate2: "
         "CTranslate2 int8 as faster-whisper encodes (stock CTranslate2 in a worker process when `make "
         "stock-encoder` installed it, else the fork: 'stock' and 'fork' name one). `tokenmap doctor` shows "
         "the choice.")
