"""Word pools for gen_corpus.py: invented, public-knowledge vocabulary only, no patient data.

Pools marked "split" are divided between the dev and test corpora by a stable hash of each
entry (see `split_pool`), so tuning a recognizer on dev names, streets or hospitals does not
teach it the test ones. Clinical vocabulary (drugs, diseases, eponyms, labs) is shared: it is
the hard-negative background that must stay visible in both.
"""

import zlib


def split_pool(items, split):
    """Entries whose CRC-32 is even go to dev, odd to test (stable across Python runs)."""
    want = 0 if split == "dev" else 1
    key = lambda x: x[0] if isinstance(x, tuple) else x  # noqa: E731  (the name decides)
    out = [x for x in items if zlib.crc32(key(x).encode("utf-8")) % 2 == want]
    return out or list(items)


# (name, sex) -- many origins; sex only picks pronouns and titles.
FIRST_NAMES = [
    ("James", "m"), ("Mary", "f"), ("Robert", "m"), ("Patricia", "f"), ("Michael", "m"),
    ("Jennifer", "f"), ("William", "m"), ("Linda", "f"), ("David", "m"), ("Elizabeth", "f"),
    ("Thomas", "m"), ("Susan", "f"), ("Charles", "m"), ("Jessica", "f"), ("Daniel", "m"),
    ("Sarah", "f"), ("Matthew", "m"), ("Karen", "f"), ("Anthony", "m"), ("Nancy", "f"),
    ("Mark", "m"), ("Margaret", "f"), ("Steven", "m"), ("Dorothy", "f"), ("Andrew", "m"),
    ("Emily", "f"), ("Joshua", "m"), ("Michelle", "f"), ("Kevin", "m"), ("Rebecca", "f"),
    ("José", "m"), ("María", "f"), ("Alejandro", "m"), ("Guadalupe", "f"), ("Joaquín", "m"),
    ("Lucía", "f"), ("Mateo", "m"), ("Ximena", "f"), ("Santiago", "m"), ("Valentina", "f"),
    ("João", "m"), ("Ana", "f"), ("Thiago", "m"), ("Conceição", "f"), ("Rafael", "m"),
    ("Chinedu", "m"), ("Ngozi", "f"), ("Oluwaseun", "m"), ("Adaeze", "f"), ("Kwame", "m"),
    ("Abena", "f"), ("Tendai", "m"), ("Nomvula", "f"), ("Babajide", "m"), ("Folake", "f"),
    ("Wei", "m"), ("Mei", "f"), ("Jian", "m"), ("Xiu", "f"), ("Hao", "m"), ("Lan", "f"),
    ("Minh", "m"), ("Thi", "f"), ("Hyun-woo", "m"), ("Ji-yeon", "f"), ("Seo-yeon", "f"),
    ("Haruto", "m"), ("Yui", "f"), ("Takeshi", "m"), ("Sakura", "f"), ("Kenji", "m"),
    ("Arjun", "m"), ("Priya", "f"), ("Rohan", "m"), ("Ananya", "f"), ("Vikram", "m"),
    ("Lakshmi", "f"), ("Sanjay", "m"), ("Deepika", "f"), ("Gurpreet", "f"), ("Harjit", "m"),
    ("Mohammed", "m"), ("Fatima", "f"), ("Omar", "m"), ("Aisha", "f"), ("Yusuf", "m"),
    ("Layla", "f"), ("Khalid", "m"), ("Noor", "f"), ("Tariq", "m"), ("Samira", "f"),
    ("Dmitri", "m"), ("Olga", "f"), ("Sergei", "m"), ("Natalia", "f"), ("Yevgeny", "m"),
    ("Katarzyna", "f"), ("Wojciech", "m"), ("Małgorzata", "f"), ("Zbigniew", "m"),
    ("Jürgen", "m"), ("Käthe", "f"), ("Björn", "m"), ("Ingrid", "f"), ("Søren", "m"),
    ("Åsa", "f"), ("Pieter", "m"), ("Femke", "f"), ("Sven", "m"), ("Liesbeth", "f"),
    ("Siobhán", "f"), ("Seán", "m"), ("Niamh", "f"), ("Ciarán", "m"), ("Aoife", "f"),
    ("Giuseppe", "m"), ("Chiara", "f"), ("Lorenzo", "m"), ("Francesca", "f"),
    ("Dimitrios", "m"), ("Eleni", "f"), ("Yiannis", "m"), ("Despina", "f"),
    ("Mehmet", "m"), ("Elif", "f"), ("Emre", "m"), ("Zeynep", "f"),
    ("Jean-Luc", "m"), ("Anne-Marie", "f"), ("François", "m"), ("Hélène", "f"),
    ("Mary-Kate", "f"), ("Billy-Ray", "m"), ("Zoë", "f"), ("Renée", "f"), ("Noël", "m"),
    ("Kalani", "f"), ("Keoni", "m"), ("Leilani", "f"), ("Mahina", "f"),
    ("Avraham", "m"), ("Shira", "f"), ("Yael", "f"), ("Eitan", "m"),
    ("Juma", "m"), ("Amani", "f"), ("Baraka", "m"), ("Zawadi", "f"),
    ("Rizal", "m"), ("Maricel", "f"), ("Jericho", "m"), ("Lourdes", "f"),
    ("Dakota", "f"), ("Cheyenne", "f"), ("Tallulah", "f"), ("Hiawatha", "m"),
    ("Bo", "m"), ("Al", "m"), ("Jo", "f"), ("Ty", "m"), ("Eve", "f"), ("Ida", "f"),
    ("Precious", "f"), ("Blessing", "f"), ("Hope", "f"), ("Faith", "f"), ("Major", "m"),
    ("Summer", "f"), ("Grace", "f"), ("Will", "m"), ("Rose", "f"), ("Dawn", "f"),
]

# Nicknames for some first names (used as "Robert 'Bobby' ...").
NICKNAMES = {
    "Robert": "Bobby", "William": "Bill", "Elizabeth": "Liz", "Margaret": "Peggy",
    "Michael": "Mike", "Jennifer": "Jen", "Patricia": "Trish", "Thomas": "Tommy",
    "Alejandro": "Alex", "Guadalupe": "Lupe", "Oluwaseun": "Seun", "Babajide": "Jide",
    "Katarzyna": "Kasia", "Wojciech": "Wojtek", "Dmitri": "Dima", "Yevgeny": "Zhenya",
    "Giuseppe": "Beppe", "Francesca": "Franci", "Dimitrios": "Jimmy", "Mohammed": "Mo",
    "Lakshmi": "Lux", "Takeshi": "Tak", "Chinedu": "Nedu", "Ciarán": "Kieran",
}

# Surnames: plain, apostrophes, particles, hyphenated, Mc/Mac, diacritics, short ones.
LAST_NAMES = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson",
    "Anderson", "Taylor", "Thomas", "Moore", "Jackson", "Martin", "Thompson", "White",
    "Harris", "Clark", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Hill", "Green", "Adams", "Baker", "Nelson", "Carter", "Mitchell", "Roberts", "Turner",
    "García", "Rodríguez", "Martínez", "Hernández", "López", "González", "Pérez", "Sánchez",
    "Ramírez", "Torres", "Flores", "Rivera", "Gómez", "Díaz", "Cruz", "Reyes", "Morales",
    "Lima", "Souza", "Oliveira", "Pereira", "Carvalho", "Ferreira", "Gonçalves",
    "Okafor", "Adeyemi", "Nwosu", "Okonkwo", "Mensah", "Asante", "Boateng", "Moyo",
    "Dlamini", "Ndlovu", "Balogun", "Eze", "Chukwu",
    "Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhao", "Wu", "Zhou", "Xu",
    "Nguyen", "Tran", "Le", "Pham", "Hoang", "Vu", "Dang", "Bui", "Do", "Ngo",
    "Kim", "Lee", "Park", "Choi", "Jung", "Kang", "Cho", "Yoon",
    "Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito", "Yamamoto", "Nakamura",
    "Patel", "Sharma", "Singh", "Kumar", "Gupta", "Reddy", "Iyer", "Nair", "Chatterjee",
    "Banerjee", "Mukherjee", "Desai", "Joshi", "Menon", "Pillai", "Krishnamurthy",
    "Khan", "Rahman", "Hussain", "Haddad", "Nasser", "Mansour", "Farouk", "Saleh",
    "Al-Farsi", "Al-Rashid", "El-Amin", "Abu-Bakr", "bin Rashid",
    "Ivanov", "Petrov", "Smirnov", "Kuznetsova", "Popova", "Sokolov", "Volkov",
    "Kowalski", "Nowak", "Wiśniewska", "Wójcik", "Kamiński", "Lewandowski", "Zieliński",
    "Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Becker", "Schäfer", "Groß",
    "van der Berg", "van Dijk", "de Vries", "van den Heuvel", "ter Horst", "de Jong",
    "von Trapp", "von Bülow", "de la Cruz", "de los Santos", "da Silva", "dos Santos",
    "del Rosario", "di Stefano", "De Luca", "La Rosa", "Le Blanc", "du Pont",
    "O'Brien", "O'Connor", "O'Neill", "O'Sullivan", "D'Angelo", "D'Souza", "N'Diaye",
    "McDonald", "MacKenzie", "McAllister", "MacLeod", "McGregor", "Mac an tSaoi",
    "Ó Súilleabháin", "Ní Bhriain", "Ó Briain",
    "Andersson", "Johansson", "Lindqvist", "Østergaard", "Sørensen", "Jørgensen",
    "Nieminen", "Korhonen", "Virtanen", "Halvorsen",
    "Papadopoulos", "Georgiou", "Konstantinidis", "Yılmaz", "Kaya", "Demir", "Öztürk",
    "Nagy", "Kovács", "Szabó", "Horváth", "Dvořák", "Novák", "Černý",
    "Cohen", "Levi", "Mizrahi", "Friedman", "Goldberg", "Rosenthal",
    "Kamau", "Otieno", "Wanjiru", "Mwangi", "Santos", "Bautista", "Villanueva",
    "Kahananui", "Kealoha", "Akana", "Begay", "Yazzie", "Tsosie", "Whitehorse",
    "Lima-Souza", "Smith-Jones", "Okafor-Adeyemi", "García-Márquez", "Harding-Wolfe",
    "Ng", "Ho", "Ma", "Ku", "Oh", "Yu", "Ong", "Tan", "Lim", "Goh",
]

# Names that are also ordinary words, for the lower-case and sentence-start traps.
WORD_NAMES = [("Hope", "f"), ("Faith", "f"), ("Grace", "f"), ("Will", "m"), ("Summer", "f")]

# US cities with their state abbreviation, state name and ZIP prefix.
US_CITIES = [
    ("Springfield", "IL", "Illinois", "627"), ("Riverside", "CA", "California", "925"),
    ("Franklin", "TN", "Tennessee", "370"), ("Greenville", "SC", "South Carolina", "296"),
    ("Bristol", "CT", "Connecticut", "060"), ("Clinton", "IA", "Iowa", "527"),
    ("Fairview", "OR", "Oregon", "970"), ("Madison", "WI", "Wisconsin", "537"),
    ("Georgetown", "TX", "Texas", "786"), ("Salem", "MA", "Massachusetts", "019"),
    ("Dayton", "OH", "Ohio", "454"), ("Boise", "ID", "Idaho", "837"),
    ("Albuquerque", "NM", "New Mexico", "871"), ("Savannah", "GA", "Georgia", "314"),
    ("Tacoma", "WA", "Washington", "984"), ("Duluth", "MN", "Minnesota", "558"),
    ("Burlington", "VT", "Vermont", "054"), ("Flagstaff", "AZ", "Arizona", "860"),
    ("Lafayette", "LA", "Louisiana", "705"), ("Billings", "MT", "Montana", "591"),
    ("Wilmington", "DE", "Delaware", "198"), ("Asheville", "NC", "North Carolina", "288"),
    ("Ann Arbor", "MI", "Michigan", "481"), ("Hilo", "HI", "Hawaii", "967"),
    ("Sioux Falls", "SD", "South Dakota", "571"), ("Lancaster", "PA", "Pennsylvania", "176"),
    ("Cheyenne", "WY", "Wyoming", "820"), ("Bangor", "ME", "Maine", "044"),
    ("Provo", "UT", "Utah", "846"), ("Fort Collins", "CO", "Colorado", "805"),
    ("St. Petersburg", "FL", "Florida", "337"), ("Little Rock", "AR", "Arkansas", "722"),
]

US_STREETS = [
    "Maple Avenue", "Oak Street", "Pine Road", "Cedar Lane", "Elm Street", "Washington Blvd",
    "Lakeview Drive", "Hillcrest Court", "Sunset Boulevard", "Meadowbrook Way",
    "Willow Creek Rd", "Church St", "Prospect Ave", "Mill Pond Lane", "Orchard Terrace",
    "Juniper Circle", "Harbor View Dr", "Old Farm Road", "Birch Hollow Ln", "Main St",
    "Martin Luther King Jr. Way", "Cherry Blossom Pkwy", "Quarry Hill Rd", "Fox Run",
    "Applegate Court", "Rio Grande Blvd NW", "Kalanianaole Hwy", "Magnolia Place",
]

UK_PLACES = [
    ("Leeds", "LS6 2AB"), ("Bristol", "BS8 1TH"), ("Manchester", "M14 5RX"),
    ("Norwich", "NR2 3PH"), ("Cardiff", "CF10 3NB"), ("Edinburgh", "EH9 1PR"),
    ("Belfast", "BT7 1NN"), ("York", "YO10 5DD"), ("Brighton", "BN1 6AG"),
    ("Sheffield", "S10 2TN"), ("Oxford", "OX4 1DP"), ("Aberdeen", "AB24 3FX"),
    ("Swansea", "SA2 8PP"), ("Exeter", "EX4 4QJ"), ("Durham", "DH1 3LE"),
]
UK_STREETS = [
    "Kingsley Road", "Acacia Avenue", "Mill Lane", "Station Road", "Church Walk",
    "Victoria Crescent", "Hawthorn Close", "Albert Terrace", "Queen's Drive", "The Green",
    "Marlborough Gardens", "Priory Mews", "St Mary's Row", "Ashby Grove",
]

CA_PLACES = [
    ("Montréal", "QC", "H2X 3K8"), ("Toronto", "ON", "M5V 2T6"), ("Halifax", "NS", "B3H 4R2"),
    ("Winnipeg", "MB", "R3T 2N2"), ("Calgary", "AB", "T2N 1N4"), ("Québec", "QC", "G1R 4P5"),
    ("Victoria", "BC", "V8W 1P6"), ("Saskatoon", "SK", "S7N 5A2"), ("Ottawa", "ON", "K1N 6N5"),
    ("St. John's", "NL", "A1C 5S7"), ("Moncton", "NB", "E1C 4B8"), ("Whitehorse", "YT", "Y1A 2C6"),
]
CA_STREETS = [
    "Rue Saint-Denis", "Boulevard René-Lévesque Ouest", "Queen Street West", "Spring Garden Rd",
    "Portage Avenue", "Rue du Petit-Champlain", "Government Street", "Avenue des Pins",
    "Jasper Avenue", "Water Street", "Rue Sherbrooke Est", "Dundas Street East",
]

DE_PLACES = [
    ("Berlin", "10115"), ("München", "80331"), ("Hamburg", "20095"), ("Köln", "50667"),
    ("Leipzig", "04109"), ("Düsseldorf", "40213"), ("Freiburg im Breisgau", "79098"),
    ("Nürnberg", "90402"), ("Dresden", "01067"), ("Bremen", "28195"), ("Würzburg", "97070"),
    ("Frankfurt am Main", "60311"),
]
DE_STREETS = [
    "Hauptstraße", "Bahnhofstraße", "Schillerstraße", "Goethestraße", "Lindenallee",
    "Am Markt", "Gartenweg", "Kirchplatz", "Friedrich-Ebert-Straße", "Rosenstraße",
    "Bergstraße", "Mühlenweg", "Karl-Marx-Allee", "Große Bleichen",
]

IN_PLACES = [
    ("Bengaluru", "Karnataka", "560038"), ("Chennai", "Tamil Nadu", "600020"),
    ("Pune", "Maharashtra", "411004"), ("Kochi", "Kerala", "682016"),
    ("Hyderabad", "Telangana", "500034"), ("Jaipur", "Rajasthan", "302001"),
    ("Kolkata", "West Bengal", "700019"), ("Lucknow", "Uttar Pradesh", "226001"),
    ("Ahmedabad", "Gujarat", "380009"), ("Chandigarh", "Punjab", "160017"),
]
IN_STREETS = [
    "Flat 302, Sai Residency, 14th Cross, Indiranagar", "12/4 Gandhi Nagar, 2nd Main Road",
    "House No. 45, Sector 21", "Plot 7, Jubilee Hills Road No. 36", "B-14, Shanti Vihar",
    "Door No. 9-3-112, Nehru Street", "22 MG Road, Near Clock Tower", "Flat 5A, Lake View Apartments",
    "No. 18, 4th Avenue, Besant Nagar", "C-203, Green Park Society, FC Road",
]

AU_PLACES = [
    ("Fitzroy", "VIC", "3065"), ("Newtown", "NSW", "2042"), ("Fremantle", "WA", "6160"),
    ("Toowong", "QLD", "4066"), ("Glenelg", "SA", "5045"), ("Sandy Bay", "TAS", "7005"),
]
AU_STREETS = ["Wattle Street", "Gertrude St", "King George Parade", "Coronation Drive",
              "Jetty Road", "Bay Road", "Banksia Crescent", "Jacaranda Ave"]

COUNTRIES = ["USA", "United States", "United Kingdom", "UK", "Canada", "Germany", "Deutschland",
             "India", "Australia", "Mexico", "Nigeria", "Philippines", "Brazil", "Vietnam",
             "Poland", "Ireland", "Kenya", "Pakistan", "Jamaica", "Haiti", "Somalia", "Ukraine"]

HOSPITALS = [
    "St. Brigid's Medical Center", "Riverside General Hospital", "Mercy Regional Health",
    "Lakeshore Community Hospital", "Northgate University Hospital", "Holy Cross Infirmary",
    "Cedar Valley Medical Center", "Bayside Children's Hospital", "Pinecrest Memorial Hospital",
    "Harborview Heart Institute", "Sacred Heart of Mary Hospital", "Eastfield Royal Infirmary",
    "St Aldhelm's NHS Foundation Trust", "Klinikum Neustadt-Süd", "Hôpital Sainte-Geneviève",
    "Sri Venkateshwara Multispeciality Hospital", "Kapiolani West Medical Center",
    "Blue Mesa Indian Health Clinic", "Good Samaritan of the Plains", "Mount Carmel East",
    "Saint Anselm Rehabilitation Hospital", "Greenway Family Practice", "Oakridge Dialysis Unit",
    "Unity Point Cancer Center", "Westbrook Behavioral Health", "Meridian Women's Clinic",
    "Three Rivers Veterans Medical Center", "Maple Leaf Health Centre", "Fairhaven Hospice",
    "Prairie Rose Nursing Home", "Clearwater Urgent Care", "Summit Orthopaedic Associates",
]

EMPLOYERS = [
    "Harborview Logistics", "Acme Tool & Die", "Northwind Traders", "Blue Heron Bakery",
    "Contoso Pharmaceuticals", "Three Pines Elementary School", "Granite State Rail",
    "Sunrise Poultry Farms", "Kestrel Aerospace", "Fabrikam Textiles", "Wingtip Toys",
    "Lakeside Public Library", "Red Rock Mining Co.", "Tailspin Airlines", "Coho Winery",
    "Litware Software", "Margie's Travel", "Proseware Inc.", "Adventure Works Cycles",
]

INSURERS = [
    "BlueRiver Health Plan", "Keystone Mutual Insurance", "Evergreen Medicaid HMO",
    "Pioneer Senior Advantage", "Allied Coastal Health", "Harmony Care PPO",
    "Great Plains Benefit Trust", "Summit Shield Insurance",
]

EMAIL_DOMAINS = [
    "mailbox.example", "inbox-mail.net", "quickpost.org", "homemail.co.uk", "webpost.de",
    "netmail.in", "postbox.ca", "fastmail.example.org", "sunmail.com.au", "kmail.example",
]

PORTAL_HOSTS = [
    "portal.stbrigid-health.org", "mychart.riverside-gen.example", "patients.northgate-uh.org",
    "www.mercyregional.example", "records.lakeshorehealth.net", "telehealth.cedarvalley.example",
]

# --- shared clinical vocabulary: hard negatives that must stay visible -----------------

DRUGS = [
    ("metformin", "500 mg PO BID"), ("lisinopril", "10 mg daily"), ("atorvastatin", "40 mg qHS"),
    ("apixaban", "5 mg BID"), ("levothyroxine", "75 mcg daily"), ("insulin glargine", "20 units SC qHS"),
    ("furosemide", "40 mg IV BID"), ("ondansetron", "4 mg IV q6h PRN"), ("amoxicillin-clavulanate", "875/125 mg BID"),
    ("carbidopa-levodopa", "25/100 mg TID"), ("sertraline", "50 mg daily"), ("albuterol", "2 puffs q4h PRN"),
    ("warfarin", "5 mg daily, goal INR 2-3"), ("prednisone", "40 mg daily x 5 days"),
    ("acetaminophen", "650 mg q6h PRN"), ("ibuprofen", "400 mg TID with food"),
    ("pantoprazole", "40 mg daily"), ("amlodipine", "5 mg daily"), ("metoprolol succinate", "25 mg daily"),
    ("gabapentin", "300 mg TID"), ("ceftriaxone", "1 g IV q24h"), ("vancomycin", "1.25 g IV q12h"),
    ("enoxaparin", "40 mg SC daily"), ("morphine", "2 mg IV q2h PRN"), ("tamsulosin", "0.4 mg qHS"),
    ("donepezil", "10 mg qHS"), ("mesalamine", "2.4 g daily"), ("adalimumab", "40 mg SC every 2 weeks"),
    ("methotrexate", "15 mg weekly"), ("folic acid", "1 mg daily"), ("hydroxychloroquine", "200 mg BID"),
    ("empagliflozin", "10 mg daily"), ("semaglutide", "0.5 mg SC weekly"), ("clopidogrel", "75 mg daily"),
    ("aspirin", "81 mg daily"), ("nitroglycerin", "0.4 mg SL PRN chest pain"),
    ("Lasix", "20 mg PO daily"), ("Eliquis", "2.5 mg BID"), ("Keppra", "500 mg BID"),
    ("Zofran", "4 mg ODT PRN"), ("Tylenol", "1 g q8h"), ("Coumadin", "3 mg daily"),
]

DISEASES = [
    "Parkinson's disease", "Hodgkin lymphoma", "non-Hodgkin lymphoma", "Crohn's disease",
    "Graves' disease", "Hashimoto's thyroiditis", "Alzheimer's dementia", "Addison's disease",
    "Cushing's syndrome", "Guillain-Barré syndrome", "Bell's palsy", "Raynaud's phenomenon",
    "Sjögren's syndrome", "Kaposi sarcoma", "Barrett's esophagus", "Ménière's disease",
    "Huntington's disease", "Lyme disease", "Paget's disease of bone", "Wolff-Parkinson-White syndrome",
    "Down syndrome", "Marfan syndrome", "Tourette syndrome", "Wernicke encephalopathy",
    "Brugada pattern", "Dupuytren's contracture", "Osgood-Schlatter disease", "Legionnaires' disease",
    "type 2 diabetes mellitus", "hypertension", "atrial fibrillation", "COPD", "CKD stage 3a",
    "community-acquired pneumonia", "congestive heart failure (HFrEF, EF 35%)", "major depressive disorder",
    "osteoarthritis of the left knee", "GERD", "iron deficiency anemia", "obstructive sleep apnea",
    "ulcerative colitis", "rheumatoid arthritis", "systemic lupus erythematosus", "gout",
]

SIGNS = [
    "positive Murphy's sign", "negative Babinski sign bilaterally", "Kernig and Brudzinski signs negative",
    "no Homans' sign", "Trendelenburg gait", "positive Romberg", "Chvostek sign absent",
    "Kussmaul respirations", "Cheyne-Stokes breathing overnight", "Virchow's node not palpable",
    "McMurray test positive", "Lachman negative", "Phalen's test positive on the right",
]

PROCEDURES = [
    "Foley catheter placed", "Swan-Ganz catheter removed", "status post Whipple procedure",
    "history of Nissen fundoplication", "Roux-en-Y gastric bypass (remote)", "Hartmann procedure",
    "Epley maneuver performed in clinic", "Gram stain showed gram-positive cocci in clusters",
    "PICC line in right basilic vein", "Holter monitor for 48 hours", "Seldinger technique used",
    "Billroth II reconstruction", "Mohs surgery to the nasal ala", "Heimlich maneuver by bystander",
]

SCORES = [
    "Glasgow Coma Scale 14", "APGAR 8 and 9", "Wells score 2", "CHA2DS2-VASc 3", "HAS-BLED 2",
    "NIHSS 4", "MELD 18", "Child-Pugh class B", "Gleason 3+4=7", "BI-RADS 4", "ECOG 1",
    "PHQ-9 of 12", "GAD-7 of 9", "CURB-65 of 2", "Braden score 15", "Morse fall score 45",
    "MoCA 22/30", "Mini-Cog 3/5", "Karnofsky 70%", "TIMI 3", "Ranson 2", "Bishop score 6",
]

LABS = [
    "Na 138 mmol/L", "K 4.1 mmol/L", "Cl 101", "HCO3 24", "BUN 22 mg/dL", "Cr 1.2 mg/dL",
    "glucose 187 mg/dL", "Hgb 10.4 g/dL", "Hct 31.2%", "WBC 11.2 x10^9/L", "Plt 245 K/uL",
    "HbA1c 7.8%", "INR 2.4", "troponin I < 0.01 ng/mL", "eGFR 58 mL/min/1.73m2", "TSH 2.1 mIU/L",
    "ALT 34 U/L", "AST 41 U/L", "alk phos 112 U/L", "T bili 0.9 mg/dL", "lipase 48 U/L",
    "BNP 812 pg/mL", "CRP 4.6 mg/dL", "ESR 38 mm/h", "lactate 1.8 mmol/L", "Mg 1.9", "Phos 3.4",
    "LDL 132 mg/dL", "ferritin 9 ng/mL", "vitamin B12 210 pg/mL", "PSA 6.2 ng/mL",
    "procalcitonin 0.35 ng/mL", "D-dimer 1.24 ug/mL FEU", "pH 7.31 / pCO2 48 / pO2 72",
]

CODES = ["E11.9", "I10", "I48.91", "J18.9", "N18.31", "F32.1", "K50.90", "G20", "C81.90",
         "CPT 99214", "CPT 93000", "LOINC 4548-4", "SNOMED 44054006", "DRG 291"]

FINDINGS = [
    "no acute cardiopulmonary process", "small left pleural effusion", "mild cardiomegaly",
    "a 7 mm nonobstructing calculus in the right lower pole", "no pneumothorax",
    "degenerative changes at L4-L5 and L5-S1", "a 1.2 x 0.9 cm hypoechoic nodule in the left lobe",
    "no intracranial hemorrhage or mass effect", "bibasilar atelectasis", "stable 4 mm pulmonary nodule",
    "moderate hiatal hernia", "trace pericardial effusion", "diffuse hepatic steatosis",
]

IMAGING = ["CT head without contrast", "chest radiograph, PA and lateral", "renal ultrasound",
           "MRI lumbar spine without contrast", "CT abdomen/pelvis with IV contrast",
           "thyroid ultrasound", "CT angiography of the chest", "transthoracic echocardiogram"]

DEVICES = [
    ("Medtronic Azure XT DR MRI pacemaker", "serial"), ("insulin pump", "serial"),
    ("Boston Scientific ICD", "serial"), ("continuous glucose monitor", "transmitter ID"),
    ("cochlear implant", "serial"), ("home BiPAP unit", "serial"), ("left ventricular assist device", "serial"),
    ("wearable cardioverter-defibrillator", "device ID"), ("spinal cord stimulator", "serial"),
]

RELATIONS = ["wife", "husband", "daughter", "son", "mother", "father", "sister", "brother",
             "partner", "niece", "grandson", "neighbour", "friend", "legal guardian"]

SPECIALTIES = ["cardiology", "neurology", "gastroenterology", "oncology", "endocrinology",
               "nephrology", "pulmonology", "rheumatology", "orthopaedics", "psychiatry",
               "physical therapy", "wound care", "palliative care", "social work"]

# PHI-free short texts (gen_corpus.py --phi-free): symptoms, genes and the words around them.
SYMPTOMS = [
    "nausea", "vomiting", "rash", "cough", "fever", "chills", "dyspnea", "chest pain", "headache",
    "dizziness", "fatigue", "diarrhea", "constipation", "abdominal pain", "palpitations",
    "ankle edema", "pruritus", "myalgia", "arthralgia", "syncope", "insomnia", "night sweats",
    "hemoptysis", "dysuria", "hematuria", "weight loss", "blurred vision", "tinnitus", "wheezing",
    "heartburn", "back pain", "numbness", "tremor", "confusion", "anorexia", "sore throat",
]

GENES = ["EGFR", "KRAS", "BRAF", "BRCA1", "BRCA2", "TP53", "ALK", "HER2", "PIK3CA", "NRAS", "IDH1",
         "JAK2", "FLT3", "NPM1", "MLH1", "MSH2", "APC", "CFTR", "HFE", "MTHFR"]

AMINO_ACIDS = ["Ala", "Arg", "Asn", "Asp", "Cys", "Gln", "Glu", "Gly", "His", "Ile", "Leu", "Lys",
               "Met", "Phe", "Pro", "Ser", "Thr", "Trp", "Tyr", "Val"]
